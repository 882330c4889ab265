package rewards

import (
	"context"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func TestClassEvalDollars(t *testing.T) {
	r, err := core.LoadReward(context.Background(), core.SourceRef{Scheme: "builtin", Path: "classeval.dollars"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct{ usd, ref, want float64 }{{0, 0.02, 0}, {0.01, 0.02, -0.5}, {1, 0.02, -5}, {0.3, 0, 0}}
	for _, c := range cases {
		got, _, err := r.Score(&core.Episode{Metrics: map[string]float64{"dollars": c.usd, "reference_dollars": c.ref}})
		if err != nil {
			t.Fatal(err)
		}
		if got["cost"] != c.want {
			t.Errorf("dollars %g ref %g: cost %g, want %g", c.usd, c.ref, got["cost"], c.want)
		}
	}
	if _, _, err := r.Score(&core.Episode{Metrics: map[string]float64{"dollars": 1}}); err == nil {
		t.Error("a missing reference_dollars must be an error")
	}
}
