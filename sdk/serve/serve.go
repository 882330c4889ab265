// Package serve turns a core.Env or core.RewardFunc into a troupe plugin
// binary (a go-plugin subprocess speaking gRPC), loaded from an agentfile as
// "grpc:PATH".
//
// A plugin's whole main is one call:
//
//	func main() { serve.Env(func() core.Env { return mything.New() }) }
//
// The same Go env compiles into troupe natively, to Wasm with the guest kit,
// and to a plugin binary with this kit, and behaves the same in all three.
//
// Serving takes over the process: it returns only after the host has closed
// the plugin, and exits the process when the host dies, when the binary is
// run by hand (it says it is a plugin), or when serving cannot start. Logs
// written with log/slog or the log package reach the host's log, each line
// prefixed with the plugin's name.
package serve

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/troupe-dev/troupe/core"
	grpcplugin "github.com/troupe-dev/troupe/plugins/grpc"
)

// Env serves the env that newEnv makes, for plugins that take no params.
// Loading it with a non-empty env.params table fails with an error naming the
// unexpected keys.
func Env(newEnv func() core.Env) {
	Serve(envConfig(newEnv))
}

func envConfig(newEnv func() core.Env) Config {
	return Config{Env: func(params map[string]any) (core.Env, error) {
		if err := noParams(params); err != nil {
			return nil, err
		}
		return newEnv(), nil
	}}
}

// EnvWithParams serves the env that factory makes from the agentfile's
// env.params (decode them with core.DecodeParams; numbers arrive as
// json.Number, which DecodeParams reads into any numeric field).
func EnvWithParams(factory core.EnvFactory) {
	Serve(Config{Env: factory})
}

// Reward serves the reward function that newReward makes, for plugins that
// take no params.
func Reward(newReward func() core.RewardFunc) {
	Serve(rewardConfig(newReward))
}

func rewardConfig(newReward func() core.RewardFunc) Config {
	return Config{Reward: func(params map[string]any) (core.RewardFunc, error) {
		if err := noParams(params); err != nil {
			return nil, err
		}
		return newReward(), nil
	}}
}

// RewardWithParams serves the reward function that factory makes from its
// params.
func RewardWithParams(factory core.RewardFactory) {
	Serve(Config{Reward: factory})
}

// Config says what one plugin binary serves: an env, a reward function, or
// both (the same binary can then be named by an [env] source and a
// [[rewards]] source).
type Config struct {
	// Env makes the env from env.params; nil serves no env.
	Env core.EnvFactory
	// Reward makes the reward function from its params; nil serves none.
	Reward core.RewardFactory
}

// Serve serves c. See the package documentation for what it does to the
// process.
func Serve(c Config) {
	level := hclog.LevelFromString(os.Getenv(grpcplugin.LogLevelEnv))
	if level == hclog.NoLevel {
		level = hclog.Info
	}
	slog.SetDefault(slog.New(newHCLogHandler(os.Stderr, level)))
	if c.Env == nil && c.Reward == nil {
		fmt.Fprintln(os.Stderr, "serve: Config has neither Env nor Reward: nothing to serve")
		os.Exit(1)
	}
	set := plugin.PluginSet{}
	if c.Env != nil {
		set[grpcplugin.EnvPluginName] = &grpcplugin.EnvPlugin{Factory: c.Env}
	}
	if c.Reward != nil {
		set[grpcplugin.RewardPluginName] = &grpcplugin.RewardPlugin{Factory: c.Reward}
	}
	go exitWithParent(os.Getppid(), time.Second/2)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  grpcplugin.Handshake(),
		VersionedPlugins: map[int]plugin.PluginSet{grpcplugin.ProtocolVersion: set},
		GRPCServer:       grpcServer,
		Logger: hclog.New(&hclog.LoggerOptions{
			Output:     os.Stderr,
			Level:      level,
			JSONFormat: true,
		}),
	})
}

// grpcServer is go-plugin's default gRPC server with the receive limit
// lifted to what go-plugin's client sends (math.MaxInt32): gRPC's default of
// 4 MiB would refuse an episode with large artifacts sent to a reward
// function.
func grpcServer(opts []grpc.ServerOption) *grpc.Server {
	return plugin.DefaultGRPCServer(append(opts, grpc.MaxRecvMsgSize(math.MaxInt32)))
}

// exitWithParent ends the process when its parent dies (the host was
// killed without a chance to stop its plugins): the process is then
// re-parented, and Getppid changes.
func exitWithParent(parent int, every time.Duration) {
	for {
		time.Sleep(every)
		if os.Getppid() != parent {
			// Nobody reads our logs now (writing to the dead host's stderr
			// pipe would end the process with SIGPIPE). The host made the
			// socket's directory and would have removed it.
			if dir := os.Getenv(plugin.EnvUnixSocketDir); strings.HasPrefix(filepath.Base(dir), grpcplugin.SocketDirPrefix) {
				_ = os.RemoveAll(dir)
			}
			os.Exit(1)
		}
	}
}

// noParams is the error for params given to a plugin that takes none.
func noParams(params map[string]any) error {
	if len(params) == 0 {
		return nil
	}
	keys := make([]string, 0, len(params))
	for k := range params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return fmt.Errorf("params: unknown key(s) %s: this plugin takes no params", strings.Join(keys, ", "))
}
