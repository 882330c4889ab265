package coding_test

import (
	"context"
	"fmt"

	"github.com/troupe-dev/troupe/core"
	_ "github.com/troupe-dev/troupe/envs/coding"
)

// The coding env is a built-in: load it by name, with params as the
// agentfile's [env.params] table gives them.
func Example() {
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: "coding", Params: map[string]any{"functions": 8, "agents": 6}})
	if err != nil {
		fmt.Println(err)
		return
	}
	env, err := src.Open()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer env.Close()
	spec := env.Spec()
	fmt.Println(spec.Name, len(spec.Agents), "agents,", spec.ObsSize, "features")
	for _, d := range spec.Decisions {
		fmt.Println(d.Name, d.NeedsText)
	}
	fmt.Println(spec.Baselines)
	// Output:
	// coding 6 agents, 18 features
	// wait false
	// implement true
	// run_tests false
	// repair true
	// review_peer true
	// submit false
	// [single_agent parallel_naive sop]
}
