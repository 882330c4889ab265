package lbf_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/lbf"
)

// An episode of Foraging-8x8-2p-2f-coop in which nobody moves ends at the
// time limit with nothing collected.
func Example() {
	env, err := lbf.New(map[string]any{"size": 8, "players": 2, "foods": 2, "coop": true})
	if err != nil {
		panic(err)
	}
	spec := env.Spec()
	fmt.Println("obs", spec.ObsSize, "state", spec.StateSize, "decisions", len(spec.Decisions))
	obs, err := env.Reset(1)
	if err != nil {
		panic(err)
	}
	fmt.Println("features per agent", len(obs[0].Features), "none legal", obs[0].Legal(lbf.None))
	for {
		res, err := env.Step([]core.Action{{Decision: lbf.None}, {Decision: lbf.None}})
		if err != nil {
			panic(err)
		}
		if res.Done() {
			fmt.Println("truncated", res.Truncated, "steps", res.Metrics[core.MetricMakespan], "return", res.Metrics[core.MetricReturn])
			break
		}
	}
	// Output:
	// obs 12 state 13 decisions 6
	// features per agent 12 none legal true
	// truncated true steps 50 return 0
}
