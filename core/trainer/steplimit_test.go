package trainer

import (
	"testing"
)

// A rollout cut by the runtime's step limit is a scored episode of its
// group: it is not failed and its decisions carry an advantage, so a
// policy that stalls is measured (and punished) like any other.
func TestStepLimitedRolloutsAreScored(t *testing.T) {
	p := toySetup(2)
	p.Setup.Rollout.MaxSteps = 3 // the toy task takes 6 steps
	st, results := firstIteration(t, p.Setup, p.Train)
	if st.FailedEpisodes != 0 || st.EnvSteps != int64(3*len(results)) {
		t.Fatalf("failed %d, env steps %d; want 0 failed and 3 steps for each of %d rollouts", st.FailedEpisodes, st.EnvSteps, len(results))
	}
	withDecisions := 0
	for k, r := range results {
		if r.Failed || !r.Episode.Truncated || !r.StepLimited || len(r.Advantages) != 2 {
			t.Fatalf("rollout %d: failed %v (%s), truncated %v, step-limited %v, advantages %v; want a truncated, scored rollout with an advantage per agent",
				k, r.Failed, r.Reason, r.Episode.Truncated, r.StepLimited, r.Advantages)
		}
		withDecisions += len(r.Decisions)
	}
	if st.Decisions != withDecisions || withDecisions == 0 {
		t.Fatalf("batch of %d decisions; the truncated rollouts recorded %d", st.Decisions, withDecisions)
	}
}
