// Command matrixgo is the built-in matrix-game env (envs/matrix) as a Go
// guest. The plugins/wasm tests build it as matrix.wasm in place of
// examples/c-matrix when clang is missing, so that the package's Example,
// which only needs a matrix game, still runs.
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o matrix.wasm ./internal/testplugins/wasm/matrixgo
package main

import (
	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/matrix"
	"github.com/troupe-dev/troupe/sdk/wasmguest"
)

func init() {
	wasmguest.ServeEnv(func(params map[string]any) (core.Env, error) { return matrix.New(params) })
}

func main() {}
