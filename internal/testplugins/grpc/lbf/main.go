// Command lbf serves the built-in Level-Based Foraging env (envs/lbf) as a
// go-plugin binary, for plugins/grpc's conformance test and benchmark.
package main

import (
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/sdk/serve"
)

func main() {
	serve.EnvWithParams(func(params map[string]any) (core.Env, error) { return lbf.New(params) })
}
