package bench

import (
	"strings"
	"testing"
)

// A policy whose failed episodes are left out of the means does not reach
// the targets on the survivors' means, and the table says why.
func TestTargetCountsFailedEpisodes(t *testing.T) {
	good := TargetPoint{Consistency: TargetConsistency + 0.005, Speedup: TargetSpeedup + 1, Episodes: 50}
	if !good.meets() {
		t.Fatalf("%+v: the targets are met with every episode scored", good)
	}
	failing := good
	failing.FailedEpisodes = 3
	if failing.meets() {
		t.Fatalf("%+v: met with 3 of 50 episodes failed", failing)
	}
	short := good
	short.Consistency = TargetConsistency - 0.001
	if short.meets() {
		t.Fatalf("%+v: met below the consistency target", short)
	}
	r := Report{Target: &TargetResult{TargetConsistency: TargetConsistency, TargetSpeedup: TargetSpeedup, EvalEpisodes: 50,
		History: []TargetPoint{failing}, NotReachedForFailures: true, FailedEpisodes: 3, ReferenceFailedEpisodes: 2}}
	var b strings.Builder
	if err := r.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3/50", "NOT reached", "episodes failed there", "the reference baseline failed 2 of 50 episodes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}
