package bench_test

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/troupe-dev/troupe/cmd/troupe/internal/bench"
	"github.com/troupe-dev/troupe/core/policy"
)

// Run the policy section of the suite and print its table, as
// `troupe bench --only policy` does.
func ExampleRun() {
	rep, err := bench.Run(context.Background(), bench.Options{Sections: []string{bench.SectionPolicy}, StepTime: 100 * time.Millisecond})
	if err != nil {
		fmt.Println(err)
		return
	}
	rep.WriteTable(os.Stdout)
}

// The flops that the policy section's GFLOP/s figures count.
func ExampleFlops() {
	c := policy.Config{ObsSize: 20, NumDecisions: 6, NumAgents: 5, Hidden: []int{64, 64}, Shared: true}
	fwd, bwd := bench.Flops(c)
	fmt.Printf("forward %.0f, backward %.0f flops per decision\n", fwd, bwd)
	// Output: forward 12160, backward 21120 flops per decision
}
