package serve_test

import (
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/sdk/serve"
)

// A built-in env that takes params (here Level-Based Foraging) becomes a
// plugin binary the same way; the agentfile's [env.params] reach its factory.
func ExampleEnvWithParams() {
	serve.EnvWithParams(func(params map[string]any) (core.Env, error) { return lbf.New(params) })
}
