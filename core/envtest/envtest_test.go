package envtest_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
)

// relayEnv is a two-agent task with every optional interface: each of four
// steps, an agent scores by picking the decision its feature points at;
// "say" needs text. fault breaks one part of the contract.
type relayEnv struct {
	fault  string
	target int
	t      int
	said   string
	// seed and memo serve the "replays from memory" fault: results by
	// seed and step, returned whatever the actions.
	seed uint64
	memo map[[2]uint64]core.StepResult
}

// calls counts every relay env's calls, for the "shared state" fault.
var calls int

func (e *relayEnv) Spec() core.EnvSpec {
	s := core.EnvSpec{
		Name: "relay", Agents: []string{"a", "b"}, ObsSize: 2,
		Decisions:   []core.DecisionSpec{{Name: "left"}, {Name: "right"}, {Name: "say", NeedsText: true}},
		StateSize:   1,
		StepRewards: true,
		Metrics:     []string{core.MetricReturn},
		Baselines:   []string{"follow"},
		MaxSteps:    10,
		Capabilities: core.CapTruncate | core.CapPrompt | core.CapSimulate |
			core.CapBaseline,
	}
	switch e.fault {
	case "unreported metric":
		s.Metrics = append(s.Metrics, "speed")
	case "task names", "task beyond its names":
		s.Metrics, s.TaskNames = append(s.Metrics, core.MetricTask), []string{"left room", "right room"}
	}
	return s
}

func (e *relayEnv) obs() []core.Observation {
	f := []float64{float64(e.target), float64(e.t)}
	if e.fault == "shared state" {
		calls++
		f[1] = float64(calls)
	}
	obs := []core.Observation{{Features: f, Text: e.said}, {Features: f, Text: e.said}}
	switch {
	case e.fault == "short features" && e.t > 0:
		obs[1].Features = f[:1]
	case e.fault == "no legal decision" && e.t == 2:
		obs[0].Mask = []bool{false, false, false}
	}
	return obs
}

func (e *relayEnv) Reset(seed uint64) ([]core.Observation, error) {
	e.target, e.t, e.said, e.seed = rand.New(rand.NewPCG(seed, 1)).IntN(2), 0, "", seed
	return e.obs(), nil
}

func (e *relayEnv) result(rew float64) core.StepResult {
	r := core.StepResult{Observations: e.obs(), Rewards: []float64{rew, rew}, Terminated: e.t >= 4,
		Metrics: map[string]float64{core.MetricReturn: float64(e.t)}}
	switch e.fault {
	case "task names": // the instance played: the target
		r.Metrics[core.MetricTask] = float64(e.target)
	case "task beyond its names":
		r.Metrics[core.MetricTask] = float64(e.target + 1)
	}
	return r
}

func (e *relayEnv) Step(a []core.Action) (core.StepResult, error) {
	if len(a) != 2 {
		return core.StepResult{}, fmt.Errorf("%d actions", len(a))
	}
	if e.fault == "replays from memory" {
		key := [2]uint64{e.seed, uint64(e.t)}
		if r, ok := e.memo[key]; ok {
			e.t++
			return r, nil
		}
		e.fault = ""
		r, err := e.Step(a)
		e.fault = "replays from memory"
		if e.memo == nil {
			e.memo = map[[2]uint64]core.StepResult{}
		}
		e.memo[key] = r
		return r, err
	}
	e.t++
	rew := 0.0
	for _, x := range a {
		if x.Decision == e.target {
			rew++
		}
		if x.Decision == 2 {
			e.said = x.Text
		}
	}
	return e.result(rew), nil
}

func (e *relayEnv) State() []float64 { return []float64{float64(e.target)} }
func (e *relayEnv) Close() error     { return nil }

func (e *relayEnv) Truncate() (core.StepResult, error) {
	r := e.result(0)
	r.Truncated = e.fault != "unmarked truncation"
	return r, nil
}

func (e *relayEnv) Prompt(agent, decision int) core.ChatRequest {
	return core.ChatRequest{Messages: []core.Message{{Role: "user", Content: fmt.Sprintf("agent %d at %d", agent, e.t)}}}
}

func (e *relayEnv) Simulate(agent, _ int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	return core.SimCompletion{Text: fmt.Sprintf("%s: %d", req.Messages[0].Content, rng.IntN(100)), CompletionTokens: 4}, nil
}

func (e *relayEnv) Baseline(name string) (core.Baseline, error) {
	if name != "follow" && e.fault != "any baseline name" {
		return nil, fmt.Errorf("no baseline %q", name)
	}
	return follow{e}, nil
}

type follow struct{ e *relayEnv }

func (b follow) Act([]core.Observation) ([]int, error) {
	if b.e.fault == "illegal baseline" && b.e.t == 1 {
		return []int{b.e.target, 7}, nil
	}
	return []int{b.e.target, b.e.target}, nil
}

func relay(t *testing.T, fault string) core.EnvSource {
	t.Helper()
	src, err := core.NewEnvSource(func(map[string]any) (core.Env, error) { return &relayEnv{fault: fault}, nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// recorder is a TB that records what it is told.
type recorder struct{ errs []string }

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// Check passes an env that keeps the contract and reports each breach.
func TestCheck(t *testing.T) {
	for _, tc := range []struct{ fault, want string }{
		{"", ""},
		{"short features", "agent 1: 1 features, spec says 2"},
		{"no legal decision", "agent 0: no legal decision"},
		{"shared state", "features differ"},
		{"unreported metric", `the spec lists metric "speed"`},
		{"unmarked truncation", "not marked Truncated"},
		{"illegal baseline", "illegal decision 7 for agent 1"},
		{"any baseline name", "Baseline of an unknown name returned no error"},
		{"replays from memory", "seed 7 replayed and branched: branched step 2"},
		{"task names", ""},
		{"task beyond its names", "reports task 2, which is not the index of one of the spec's 2 task_names"},
	} {
		t.Run(tc.fault, func(t *testing.T) {
			var r recorder
			envtest.Check(&r, relay(t, tc.fault))
			switch {
			case tc.want == "" && len(r.errs) > 0:
				t.Fatalf("a sound env: %q", r.errs)
			case tc.want != "" && (len(r.errs) != 1 || !strings.Contains(r.errs[0], tc.want)):
				t.Fatalf("errors %q, want one containing %q", r.errs, tc.want)
			}
		})
	}
}

// badSource declares a capability its envs lack, or gives a spec other
// than its envs'.
type badSource struct{ spec core.EnvSpec }

func (s badSource) Spec() core.EnvSpec      { return s.spec }
func (s badSource) Open() (core.Env, error) { return &plainEnv{relayEnv{}}, nil }
func (badSource) Close() error              { return nil }

// plainEnv has no optional method but declares them all (its relayEnv's
// spec).
type plainEnv struct{ r relayEnv }

func (e *plainEnv) Spec() core.EnvSpec                            { return e.r.Spec() }
func (e *plainEnv) Reset(seed uint64) ([]core.Observation, error) { return e.r.Reset(seed) }
func (e *plainEnv) Step(a []core.Action) (core.StepResult, error) { return e.r.Step(a) }
func (e *plainEnv) State() []float64                              { return e.r.State() }
func (e *plainEnv) Close() error                                  { return nil }

func TestCheckSource(t *testing.T) {
	spec := (&relayEnv{}).Spec()
	var r recorder
	envtest.Check(&r, badSource{spec: spec})
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "declares capability truncate, but *envtest_test.plainEnv does not implement core.Truncater") {
		t.Errorf("declared capability missing: %q", r.errs)
	}
	other := spec
	other.MaxSteps = 9
	r = recorder{}
	envtest.Check(&r, badSource{spec: other})
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "an instance's spec differs from the source's") {
		t.Errorf("spec differs: %q", r.errs)
	}
}

// SameTrajectories passes two sources of the same env, covering baselines
// and truncations, and reports the first difference of two that differ.
func TestSameTrajectories(t *testing.T) {
	var r recorder
	st := envtest.SameTrajectories(&r, relay(t, ""), relay(t, ""))
	if len(r.errs) > 0 || st.Episodes != 20 || st.Baseline == 0 || st.Truncations == 0 || st.Rewarded == 0 || st.Ended < 16 {
		t.Fatalf("same env: %+v, %q", st, r.errs)
	}
	envtest.SameTrajectories(&r, relay(t, ""), relay(t, "unreported metric"))
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "the specs differ") {
		t.Fatalf("different specs: %q", r.errs)
	}
	r = recorder{}
	st = envtest.SameTrajectories(&r, relay(t, ""), relay(t, "unmarked truncation"), 1, 2, 3, 4, 5, 6)
	if len(r.errs) != 1 || !strings.Contains(r.errs[0], "seed 5: step") || !strings.Contains(r.errs[0], "terminated/truncated differ") {
		t.Fatalf("different truncation: %q", r.errs)
	}
	if st.Episodes != 5 {
		t.Errorf("stopped after %d episodes, want 5", st.Episodes)
	}
}
