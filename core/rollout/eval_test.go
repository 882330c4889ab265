package rollout

import (
	"slices"
	"testing"
)

// The table lists grpo, then the env's baselines in the spec's order, then
// random, then any other policy by name.
func TestPolicyOrder(t *testing.T) {
	r := EvalReport{Baselines: []string{"sop", "single_agent"}, Policies: map[string]PolicyResult{}}
	for _, n := range []string{"zeta", "random", "single_agent", "alpha", "sop", "grpo"} {
		r.Policies[n] = PolicyResult{}
	}
	want := []string{"grpo", "sop", "single_agent", "random", "alpha", "zeta"}
	if got := r.PolicyOrder(); !slices.Equal(got, want) {
		t.Fatalf("PolicyOrder() = %v, want %v", got, want)
	}
}
