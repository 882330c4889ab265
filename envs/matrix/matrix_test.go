package matrix

import (
	"context"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func mustNew(t *testing.T, params map[string]any) *Env {
	t.Helper()
	e, err := New(params)
	if err != nil {
		t.Fatalf("New(%v): %v", params, err)
	}
	return e
}

// play runs a whole episode in which the agents always pick (a0, a1).
func play(t *testing.T, e *Env, a0, a1 int) core.StepResult {
	t.Helper()
	if _, err := e.Reset(7); err != nil {
		t.Fatal(err)
	}
	for {
		res, err := e.Step([]core.Action{{Decision: a0}, {Decision: a1}})
		if err != nil {
			t.Fatal(err)
		}
		if res.Done() {
			return res
		}
	}
}

func TestPayoffTables(t *testing.T) {
	climbing := [3][3]float64{{11, -30, 0}, {-30, 7, 0}, {0, 6, 5}}
	penalty := func(k float64) [3][3]float64 { return [3][3]float64{{k, 0, 10}, {0, 2, 0}, {10, 0, k}} }
	cases := []struct {
		params map[string]any
		want   [3][3]float64
	}{
		{nil, climbing},
		{map[string]any{"game": "climbing"}, climbing},
		{map[string]any{"game": "penalty"}, penalty(-100)},
		{map[string]any{"game": "penalty", "k": -25}, penalty(-25)},
		{map[string]any{"game": "penalty", "k": 0}, penalty(0)},
	}
	for _, c := range cases {
		e := mustNew(t, c.params)
		for a0 := range 3 {
			for a1 := range 3 {
				res := play(t, e, a0, a1)
				want := 25 * c.want[a0][a1]
				if got := res.Metrics[core.MetricReturn]; got != want {
					t.Errorf("%v: always (%d,%d): return %v, want %v", c.params, a0, a1, got, want)
				}
			}
		}
	}
}

func TestOptimumAndMetrics(t *testing.T) {
	for _, c := range []struct {
		game   string
		a0, a1 int
		want   float64
	}{{"climbing", 0, 0, 275}, {"penalty", 0, 2, 250}, {"penalty", 2, 0, 250}} {
		e := mustNew(t, map[string]any{"game": c.game})
		res := play(t, e, c.a0, c.a1)
		want := map[string]float64{
			core.MetricReturn: c.want, metricOptimalReturn: c.want, core.MetricMakespan: 25,
			core.MetricReferenceMakespan: 25, core.MetricTokens: 0, core.MetricReferenceTokens: 0,
		}
		if len(res.Metrics) != len(want) {
			t.Errorf("%s: metrics %v, want %v", c.game, res.Metrics, want)
		}
		for k, v := range want {
			if got, ok := res.Metrics[k]; !ok || got != v {
				t.Errorf("%s: metric %s = %v (present %v), want %v", c.game, k, got, ok, v)
			}
		}
		if !res.Terminated || res.Truncated {
			t.Errorf("%s: last step Terminated=%v Truncated=%v, want true/false", c.game, res.Terminated, res.Truncated)
		}
		for _, m := range e.Spec().Metrics {
			if _, ok := res.Metrics[m]; !ok {
				t.Errorf("spec metric %q not reported", m)
			}
		}
	}
}

func TestStepRewardsAndLength(t *testing.T) {
	e := mustNew(t, map[string]any{"game": "climbing", "steps": 3})
	obs, err := e.Reset(1)
	if err != nil {
		t.Fatal(err)
	}
	checkObs(t, obs)
	joint := [][2]int{{0, 1}, {2, 1}, {1, 1}}
	wantR := []float64{-30, 6, 7}
	total := 0.0
	for i, j := range joint {
		res, err := e.Step([]core.Action{{Decision: j[0]}, {Decision: j[1]}})
		if err != nil {
			t.Fatal(err)
		}
		checkObs(t, res.Observations)
		if len(res.Rewards) != 2 || res.Rewards[0] != wantR[i] || res.Rewards[1] != wantR[i] {
			t.Errorf("step %d: rewards %v, want both %v", i, res.Rewards, wantR[i])
		}
		total += wantR[i]
		if last := i == len(joint)-1; res.Done() != last || (res.Metrics != nil) != last {
			t.Errorf("step %d: done=%v metrics=%v", i, res.Done(), res.Metrics)
		}
		if i == len(joint)-1 && res.Metrics[core.MetricReturn] != total {
			t.Errorf("return %v, want %v", res.Metrics[core.MetricReturn], total)
		}
	}
	if _, err := e.Step([]core.Action{{}, {}}); err == nil {
		t.Error("Step after the end: want error")
	}
}

func checkObs(t *testing.T, obs []core.Observation) {
	t.Helper()
	if len(obs) != 2 {
		t.Fatalf("%d observations, want 2", len(obs))
	}
	for i, o := range obs {
		if len(o.Features) != 1 || o.Features[0] != 1 {
			t.Errorf("agent %d: features %v, want [1]", i, o.Features)
		}
		if len(o.Mask) != 3 || !o.Mask[0] || !o.Mask[1] || !o.Mask[2] {
			t.Errorf("agent %d: mask %v, want all true", i, o.Mask)
		}
	}
	obs[0].Features[0] = 99 // observations are the caller's own
	if obs[1].Features[0] != 1 {
		t.Error("agents share feature storage")
	}
}

func TestState(t *testing.T) {
	e := mustNew(t, nil)
	if _, err := e.Reset(0); err != nil {
		t.Fatal(err)
	}
	s := e.State()
	if len(s) != e.Spec().StateSize {
		t.Fatalf("state len %d, want %d", len(s), e.Spec().StateSize)
	}
	for i, v := range s {
		if v != 0 {
			t.Errorf("state[%d] = %v before the first step, want 0", i, v)
		}
	}
	if _, err := e.Step([]core.Action{{Decision: 2}, {Decision: 1}}); err != nil {
		t.Fatal(err)
	}
	for i, v := range e.State() {
		want := 0.0
		if i == 2*3+1 {
			want = 1
		}
		if v != want {
			t.Errorf("after (2,1): state[%d] = %v, want %v", i, v, want)
		}
	}
}

func TestBadParamsAndActions(t *testing.T) {
	for _, c := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"game": "chicken"}, `"game"`},
		{map[string]any{"game": "penalty", "k": 5}, `"k"`},
		{map[string]any{"game": "climbing", "k": -25}, `"k"`},
		{map[string]any{"steps": 0}, `"steps"`},
		{map[string]any{"steps": "ten"}, `"steps"`},
		{map[string]any{"rounds": 3}, `"rounds"`},
	} {
		_, err := New(c.params)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%v) = %v, want an error naming %s", c.params, err, c.want)
		}
	}
	e := mustNew(t, nil)
	if _, err := e.Step([]core.Action{{}, {}}); err == nil {
		t.Error("Step before Reset: want error")
	}
	if _, err := e.Reset(0); err != nil {
		t.Fatal(err)
	}
	for _, acts := range [][]core.Action{{{}}, {{Decision: 3}, {}}, {{}, {Decision: -1}}} {
		if _, err := e.Step(acts); err == nil {
			t.Errorf("Step(%v): want error", acts)
		}
	}
}

func TestTruncate(t *testing.T) {
	e := mustNew(t, map[string]any{"game": "penalty"})
	if _, err := e.Reset(0); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if _, err := e.Step([]core.Action{{Decision: 1}, {Decision: 1}}); err != nil {
			t.Fatal(err)
		}
	}
	res, err := e.Truncate()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Metrics[core.MetricReturn] != 8 || res.Metrics[core.MetricMakespan] != 4 {
		t.Errorf("Truncate: truncated=%v metrics=%v, want return 8, makespan 4", res.Truncated, res.Metrics)
	}
}

func TestRegistered(t *testing.T) {
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: Name,
		Params: map[string]any{"game": "penalty", "k": -50}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	if err := env.Spec().Validate(); err != nil {
		t.Fatal(err)
	}
	if got := env.(*Env).Payoff(0, 0); got != -50 {
		t.Errorf("payoff(0,0) = %v, want -50", got)
	}
}
