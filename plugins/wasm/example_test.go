package wasm

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/troupe-dev/troupe/core"
)

// Loading a Wasm env through the registered "wasm" scheme, as an agentfile's
// source = "wasm:matrix.wasm" does, and playing one step. matrix.wasm is
// examples/c-matrix built by the package's TestMain (or, without clang, the
// same game as a Go guest, internal/testplugins/wasm/matrixgo).
func Example() {
	ctx := context.Background()
	ref := core.SourceRef{Scheme: "wasm", Path: filepath.Join(modDir, "matrix.wasm"),
		Params: map[string]any{"game": "penalty", "k": -25}}
	src, err := core.LoadEnv(ctx, ref)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	env, err := src.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Close()
	obs, _ := env.Reset(1)
	res, err := env.Step([]core.Action{{Decision: 0}, {Decision: 2}})
	fmt.Println(len(obs), "agents; rewards", res.Rewards, err)
	_, err = env.Step([]core.Action{{Decision: 0}, {Decision: 7}})
	fmt.Println(err)
	// Output:
	// 2 agents; rewards [10 10] <nil>
	// wasm module matrix.wasm: step: failed: matrix: Step: agent 1: decision 7 out of range 0..2
}
