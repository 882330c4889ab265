package grpcplugin

import (
	"context"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/troupe-dev/troupe/core"
	pb "github.com/troupe-dev/troupe/plugins/grpc/proto"
)

// ProtocolVersion is the version of troupe's plugin wire protocol
// (plugins/grpc/proto/troupe.proto). Host and plugin must speak the same one.
const ProtocolVersion = 1

// Names under which a plugin binary serves its parts (go-plugin plugin names).
const (
	EnvPluginName    = "env"
	RewardPluginName = "reward"
)

// Handshake returns the go-plugin handshake shared by troupe and its
// plugins. The magic cookie only tells a plugin binary that it was started by
// troupe (a binary run by hand prints that it is a plugin and exits); it is
// not a security measure.
func Handshake() plugin.HandshakeConfig {
	return plugin.HandshakeConfig{
		ProtocolVersion:  ProtocolVersion,
		MagicCookieKey:   "TROUPE_PLUGIN",
		MagicCookieValue: "troupe-env-reward-7c1d0f5b",
	}
}

// EnvPlugin is the go-plugin definition of an environment. A plugin binary
// serves it with Factory set (the serve kit does this); the host uses it
// without a factory to get a client.
type EnvPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Factory makes the env from the agentfile's env.params.
	Factory core.EnvFactory
}

// GRPCServer registers the Env service on the plugin's gRPC server.
func (p *EnvPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterEnvServer(s, &envServer{factory: p.Factory})
	return nil
}

// GRPCClient returns a pb.EnvClient for the host.
func (p *EnvPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewEnvClient(c), nil
}

// RewardPlugin is the go-plugin definition of a reward function. A plugin
// binary serves it with Factory set; the host uses it to get a client.
type RewardPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Factory makes the reward function from its params.
	Factory core.RewardFactory
}

// GRPCServer registers the Reward service on the plugin's gRPC server.
func (p *RewardPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	pb.RegisterRewardServer(s, &rewardServer{factory: p.Factory})
	return nil
}

// GRPCClient returns a pb.RewardClient for the host.
func (p *RewardPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewRewardClient(c), nil
}

// hostPlugins is the plugin set the host dispenses from.
var hostPlugins = plugin.PluginSet{
	EnvPluginName:    &EnvPlugin{},
	RewardPluginName: &RewardPlugin{},
}
