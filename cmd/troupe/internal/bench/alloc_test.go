package bench

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/plugins/wasm"
)

// Allocation budgets of one joint LBF step (8x8-2p-2f-coop). A step that
// allocates more than this fails TestStepAllocationBudget: look for the new
// allocation before raising a number.
const (
	// In-process: the observations, their features and their masks.
	LBFStepAllocBudget = 3
	// Through Wasm: the host decodes replies into a wasmabi.Slab, one
	// allocation every few hundred steps, which AllocsPerRun's integer
	// average makes 0.
	WasmLBFStepAllocBudget = 0
)

// noLoadActions returns joint actions that only wait and move, never
// load, so no food is collected and no episode ends during the count.
func noLoadActions(n, agents int) [][]core.Action {
	rng := rand.New(rand.NewPCG(3, 4))
	acts := make([][]core.Action, n)
	for i := range acts {
		acts[i] = make([]core.Action, agents)
		for j := range acts[i] {
			acts[i][j].Decision = rng.IntN(lbf.Load) // none, north, south, west, east
		}
	}
	return acts
}

// stepAllocs returns the mean heap allocations of one env.Step over runs
// steps of one long episode.
func stepAllocs(t *testing.T, env core.Env, runs int) float64 {
	t.Helper()
	if _, err := env.Reset(1); err != nil {
		t.Fatal(err)
	}
	acts := noLoadActions(256, env.Spec().NumAgents())
	i := 0
	var stepErr error
	allocs := testing.AllocsPerRun(runs, func() {
		res, err := env.Step(acts[i%len(acts)])
		i++
		if err != nil && stepErr == nil {
			stepErr = err
		}
		if res.Done() && stepErr == nil {
			t.Errorf("episode ended at step %d; the count must not include a reset", i)
		}
	})
	if stepErr != nil {
		t.Fatal(stepErr)
	}
	return allocs
}

func TestStepAllocationBudget(t *testing.T) {
	params := LBFStepParams()
	t.Run("in-process", func(t *testing.T) {
		env, err := lbf.New(params)
		if err != nil {
			t.Fatal(err)
		}
		if got := stepAllocs(t, env, 2000); got > LBFStepAllocBudget {
			t.Errorf("in-process LBF step: %.1f allocations per step, budget %d", got, LBFStepAllocBudget)
		} else {
			t.Logf("in-process LBF step: %.1f allocations per step (budget %d)", got, LBFStepAllocBudget)
		}
	})
	t.Run("wasm", func(t *testing.T) {
		file := pluginFile(t, "wasm/lbf")
		ctx := context.Background()
		l := wasm.NewLoader(wasm.Options{Logger: quietLogger()})
		defer l.Close(ctx)
		env, closeEnv, err := openPlugin(ctx, l, "wasm", file, params)
		if err != nil {
			t.Fatal(err)
		}
		defer closeEnv()
		if got := stepAllocs(t, env, 2000); got > WasmLBFStepAllocBudget {
			t.Errorf("Wasm LBF step: %.1f allocations per step, budget %d", got, WasmLBFStepAllocBudget)
		} else {
			t.Logf("Wasm LBF step: %.1f allocations per step (budget %d)", got, WasmLBFStepAllocBudget)
		}
	})
}
