package matrix_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/matrix"
)

// Two agents that always coordinate on the top-left cell of Climbing earn
// the optimal 11 per step, 275 over the 25 steps.
func Example() {
	env, err := matrix.New(map[string]any{"game": "climbing"})
	if err != nil {
		panic(err)
	}
	if _, err := env.Reset(1); err != nil {
		panic(err)
	}
	for {
		res, err := env.Step([]core.Action{{Decision: 0}, {Decision: 0}})
		if err != nil {
			panic(err)
		}
		if res.Done() {
			fmt.Println("return", res.Metrics[core.MetricReturn], "of", res.Metrics["optimal_return"])
			break
		}
	}
	// Output: return 275 of 275
}
