// Command faulty serves the counter env and reward function
// (internal/testplugins/grpc/counter), which misbehave on request, for
// plugins/grpc's fault tests.
//
// With TROUPE_TEST_FAULTY_HANDSHAKE=badcookie in its environment it expects
// a different go-plugin magic cookie; with =badversion it speaks wire
// protocol version 99.
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/go-plugin"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/testplugins/grpc/counter"
	grpcplugin "github.com/troupe-dev/troupe/plugins/grpc"
	"github.com/troupe-dev/troupe/sdk/serve"
)

// HandshakeEnv selects a faulty handshake.
const HandshakeEnv = "TROUPE_TEST_FAULTY_HANDSHAKE"

func main() {
	handshake := os.Getenv(HandshakeEnv)
	envFactory := func(params map[string]any) (core.Env, error) { return counter.New(params) }
	rewardFactory := func(map[string]any) (core.RewardFunc, error) { return counter.Sum{}, nil }

	switch handshake {
	case "":
		serve.Serve(serve.Config{Env: envFactory, Reward: rewardFactory})
	case "badcookie", "badversion":
		hs := grpcplugin.Handshake()
		version := grpcplugin.ProtocolVersion
		if handshake == "badcookie" {
			hs.MagicCookieValue = "someone-elses-cookie"
		} else {
			version = 99
			hs.ProtocolVersion = uint(version)
		}
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig:  hs,
			VersionedPlugins: map[int]plugin.PluginSet{version: {grpcplugin.EnvPluginName: &grpcplugin.EnvPlugin{Factory: envFactory}}},
			GRPCServer:       plugin.DefaultGRPCServer,
		})
	default:
		fmt.Fprintf(os.Stderr, "faulty: unknown handshake variant %q\n", handshake)
		os.Exit(2)
	}
}
