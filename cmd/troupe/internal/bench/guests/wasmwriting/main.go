// Command wasmwriting is the built-in collaborative-writing env (envs/writing)
// compiled, unchanged, into a Wasm plugin with the Go guest kit, for
// `troupe bench`'s env-step comparison.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o writing.wasm ./cmd/troupe/internal/bench/guests/wasmwriting
package main

import (
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/writing"
	"github.com/troupe-dev/troupe/sdk/wasmguest"
)

func init() {
	wasmguest.ServeEnv(func(params map[string]any) (core.Env, error) { return writing.New(params) })
}

func main() {}
