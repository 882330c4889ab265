package rollout_test

import (
	"fmt"
	"os"

	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/internal/stats"
)

// A report's per-instance table: the trained policy's difference to a
// rule on the seeds of each document, which eval --json holds as by_task
// and troupe eval --by-task prints. Here the policy wins on one document
// and loses more on the other, so the overall difference says little
// without the split.
func ExampleEvalReport_WriteTaskTable() {
	diff := func(mean, lo, hi float64) rollout.Difference {
		return rollout.Difference{Mean: mean, CI95: stats.Interval{Lo: lo, Hi: hi}}
	}
	rep := rollout.EvalReport{
		Policies:     map[string]rollout.PolicyResult{"grpo": {}, "rule": {}},
		BestBaseline: "rule",
		Paired: map[string]rollout.PairedResult{"rule": {
			Pairs:  120,
			Reward: diff(-0.004, -0.009, 0.001),
			ByTask: []rollout.TaskPair{
				{Task: 0, Name: "3389-manifest-lint", Pairs: 60, Reward: diff(-0.045, -0.068, -0.024)},
				{Task: 1, Name: "3923-cargo-min-publish-age", Pairs: 60, Reward: diff(0.037, 0.021, 0.055)},
			},
		}},
	}
	rep.WriteTaskTable(os.Stdout)
	fmt.Println("instances:", len(rep.Paired["rule"].ByTask))
	// Output:
	// joint reward by task instance: grpo − each policy on the seeds that played the instance, mean [95% paired-bootstrap interval]
	// task                        seeds                grpo − rule*
	// 3389-manifest-lint             60  -0.0450 [-0.0680, -0.0240]
	// 3923-cargo-min-publish-age     60  +0.0370 [+0.0210, +0.0550]
	// instances: 2
}
