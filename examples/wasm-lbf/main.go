// Command wasm-lbf is troupe's built-in Level-Based Foraging env (envs/lbf)
// compiled, unchanged, into a Wasm plugin with the Go guest kit: the same
// source runs in-process as "builtin:lbf" and as "wasm:lbf.wasm", and the
// host's conformance test checks that both give identical trajectories.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o lbf.wasm ./examples/wasm-lbf
package main

import (
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/sdk/wasmguest"
)

func init() {
	wasmguest.ServeEnv(func(params map[string]any) (core.Env, error) { return lbf.New(params) })
}

func main() {}
