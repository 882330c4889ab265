package rewards

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

// artifactRewards read an artifact, not metrics: they declare none.
var artifactRewards = []string{"writing.consistency"}

// TestRequiredMetricsAreExact checks each built-in reward's declared
// metrics (core.RequiredMetricsOf), on which the runtime's check before
// training relies, against what Score does: it scores an episode that
// carries exactly the declared metrics, and fails when any one is missing.
func TestRequiredMetricsAreExact(t *testing.T) {
	_, names := core.Builtins()
	for _, name := range names {
		r, err := core.LoadReward(context.Background(), core.SourceRef{Scheme: "builtin", Path: name})
		if err != nil {
			t.Fatal(err)
		}
		need := core.RequiredMetricsOf(r)
		if slices.Contains(artifactRewards, name) {
			if len(need) > 0 {
				t.Errorf("%s reads an artifact but declares metrics %v", name, need)
			}
			continue
		}
		if len(need) == 0 {
			t.Errorf("%s declares no required metrics (implement core.MetricReader)", name)
			continue
		}
		full := map[string]float64{}
		for _, m := range need {
			full[m] = 0.5
		}
		if _, _, err := r.Score(&core.Episode{Metrics: full}); err != nil {
			t.Errorf("%s: an episode with exactly its declared metrics %v: %v", name, need, err)
		}
		for _, m := range need {
			less := maps.Clone(full)
			delete(less, m)
			if _, _, err := r.Score(&core.Episode{Metrics: less}); err == nil {
				t.Errorf("%s declares %q but scores an episode without it", name, m)
			}
		}
	}
}

// TestRequiredMetricsCheck: a reward whose metric the env does not list
// fails the check, naming the reward and the metric; a metric the runtime
// sets passes whatever the env lists.
func TestRequiredMetricsCheck(t *testing.T) {
	spec := core.EnvSpec{Name: "toy", Metrics: []string{core.MetricMakespan}}
	err := core.CheckRequiredMetrics(spec, Makespan{})
	if err == nil || !contains(err.Error(), "reward makespan", `"reference_makespan_s"`, "env toy") {
		t.Fatalf("makespan without reference_makespan_s: %v", err)
	}
	spec.Metrics = append(spec.Metrics, core.MetricReferenceMakespan, core.MetricReferenceTokens)
	if err := core.CheckRequiredMetrics(spec, Makespan{}); err != nil {
		t.Fatal(err)
	}
	// "tokens" is the runtime's when the env does not report it.
	if err := core.CheckRequiredMetrics(spec, Tokens{}); err != nil {
		t.Fatal(err)
	}
}

func contains(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
