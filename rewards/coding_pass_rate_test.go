package rewards

import (
	"context"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func TestCodingPassRate(t *testing.T) {
	r, err := core.LoadReward(context.Background(), core.SourceRef{Scheme: "builtin", Path: "coding.pass_rate"})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Components(); len(got) != 1 || got[0] != "quality" {
		t.Fatalf("components %v", got)
	}
	comp, metrics, err := r.Score(&core.Episode{Metrics: map[string]float64{"pass_rate": 0.625}})
	if err != nil {
		t.Fatal(err)
	}
	if comp["quality"] != 0.625 || metrics["pass_rate"] != 0.625 {
		t.Fatalf("quality %v, pass_rate %v; want 0.625", comp["quality"], metrics["pass_rate"])
	}
	for _, tc := range []struct {
		metrics map[string]float64
		want    string
	}{
		{map[string]float64{"consistency": 1}, `no metric "pass_rate"`},
		{map[string]float64{"pass_rate": 1.5}, "want a fraction"},
		{map[string]float64{"pass_rate": -0.1}, "want a fraction"},
	} {
		if _, _, err := r.Score(&core.Episode{Metrics: tc.metrics}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("metrics %v: want error containing %q, got %v", tc.metrics, tc.want, err)
		}
	}
	if _, err := core.LoadReward(context.Background(), core.SourceRef{Scheme: "builtin", Path: "coding.pass_rate", Params: map[string]any{"x": 1}}); err == nil {
		t.Fatal("params must be an error")
	}
}
