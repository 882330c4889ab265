// Command grpcwriting serves the built-in collaborative-writing env
// (envs/writing) as a go-plugin binary, for `troupe bench`'s env-step
// comparison.
//
//	go build -o writing-plugin ./cmd/troupe/internal/bench/guests/grpcwriting
package main

import (
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/writing"
	"github.com/troupe-dev/troupe/sdk/serve"
)

func main() {
	serve.EnvWithParams(func(params map[string]any) (core.Env, error) { return writing.New(params) })
}
