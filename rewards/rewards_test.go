package rewards

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func TestMakespan(t *testing.T) {
	cases := []struct{ ms, ref, want float64 }{
		{100, 100, 0}, {50, 100, 0.5}, {100.0 / 3, 100, 2.0 / 3}, {400, 100, -1}, {10, 0, 0},
	}
	for _, c := range cases {
		got, _, err := Makespan{}.Score(&core.Episode{Metrics: map[string]float64{"makespan_s": c.ms, "reference_makespan_s": c.ref}})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got["speed"]-c.want) > 1e-12 {
			t.Errorf("makespan %g ref %g: speed %g, want %g", c.ms, c.ref, got["speed"], c.want)
		}
	}
	if _, _, err := (Makespan{}).Score(&core.Episode{Metrics: map[string]float64{"makespan_s": 1}}); err == nil {
		t.Fatal("missing reference metric must be an error")
	}
}

func TestTokens(t *testing.T) {
	cases := []struct{ n, ref, want float64 }{{0, 100, 0}, {50, 100, -0.5}, {1e6, 100, -5}, {10, 0, 0}}
	for _, c := range cases {
		got, _, err := Tokens{}.Score(&core.Episode{Metrics: map[string]float64{"tokens": c.n, "reference_tokens": c.ref}})
		if err != nil {
			t.Fatal(err)
		}
		if got["cost"] != c.want {
			t.Errorf("tokens %g ref %g: cost %g, want %g", c.n, c.ref, got["cost"], c.want)
		}
	}
}

func TestReturnAndRegistry(t *testing.T) {
	r, err := core.LoadReward(context.Background(), core.SourceRef{Scheme: "builtin", Path: "return"})
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := r.Score(&core.Episode{Metrics: map[string]float64{"return": 175}})
	if err != nil || got["return"] != 175 {
		t.Fatalf("return: %v %v", got, err)
	}
	_, err = core.LoadReward(context.Background(), core.SourceRef{Scheme: "builtin", Path: "return", Params: map[string]any{"x": 1, "a": 2}})
	if err == nil {
		t.Fatal("params on a parameterless reward must be an error")
	}
	if msg := err.Error(); !strings.Contains(msg, "reward return") || !strings.Contains(msg, "unknown key(s) a, x") {
		t.Fatalf("the error must name the reward and the keys: %v", err)
	}
	if _, _, err := r.Score(&core.Episode{Metrics: map[string]float64{"return": math.NaN()}}); err == nil {
		t.Fatal("NaN metric must be an error")
	}
}
