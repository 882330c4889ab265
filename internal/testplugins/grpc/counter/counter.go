// Package counter is a small env and reward function for plugins/grpc's
// tests: it implements every optional env interface (core.Truncater,
// core.Prompter, core.Simulator, core.BaselineProvider) and misbehaves on
// request (exits, hangs, panics, logs), so the same code runs in-process and
// inside the faulty plugin binary.
package counter

import (
	"errors"
	"fmt"
	"log"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"

	"github.com/troupe-dev/troupe/core"
)

// Params choose the episode length and the faults (0: none). With
// ExitInAct the baselines exit the process instead of deciding; with
// NaNPrompt Prompt returns a request JSON cannot encode.
type Params struct {
	Steps       int  `json:"steps"`
	ExitAtStep  int  `json:"exit_at_step"`
	ExitCode    int  `json:"exit_code"`
	HangAtStep  int  `json:"hang_at_step"`
	PanicAtStep int  `json:"panic_at_step"`
	ExitInAct   bool `json:"exit_in_act"`
	NaNPrompt   bool `json:"nan_prompt"`
	Log         bool `json:"log"`
}

// Env is a two-agent env: each step every agent adds its decision (0 or 1,
// "zero" or "one"; "one" needs text) to a shared total; the episode ends
// after Steps steps. Agent i's per-step reward is the total.
type Env struct {
	p     Params
	t     int
	total float64
}

// New makes the env from params (defaults: 10 steps, exit code 3).
func New(params map[string]any) (*Env, error) {
	p := Params{Steps: 10, ExitCode: 3}
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, err
	}
	if p.Steps < 1 {
		return nil, fmt.Errorf("counter: params: key \"steps\": want ≥ 1, got %d", p.Steps)
	}
	return &Env{p: p}, nil
}

// Spec describes the env.
func (c *Env) Spec() core.EnvSpec {
	return core.EnvSpec{
		Name:        "counter",
		Agents:      []string{"a", "b"},
		ObsSize:     2,
		Decisions:   []core.DecisionSpec{{Name: "zero"}, {Name: "one", NeedsText: true, Tier: "small"}},
		StateSize:   1,
		StepRewards: true,
		Metrics:     []string{"total"},
		Baselines:   []string{"ones", "alternate"},
		// Carried by the spec JSON: the conformance test compares it.
		ReferenceBaseline: "ones",
		MaxSteps:          c.p.Steps,
		// Every optional interface the env implements: the serve kit
		// advertises exactly these to the host.
		Capabilities: core.CapTruncate | core.CapPrompt | core.CapSimulate | core.CapBaseline,
	}
}

func (c *Env) obs() []core.Observation {
	o := make([]core.Observation, 2)
	for i := range o {
		o[i] = core.Observation{Features: []float64{float64(c.t), c.total}, Text: fmt.Sprintf("agent %d at step %d", i, c.t)}
		if c.t%2 == 1 {
			o[i].Mask = []bool{true, i == 0}
		}
	}
	return o
}

// Reset starts an episode whose total starts at seed mod 7.
func (c *Env) Reset(seed uint64) ([]core.Observation, error) {
	if c.p.Log {
		slog.Info("reset", "seed", seed)
		log.Printf("log package at reset %d", seed)
		fmt.Fprintf(os.Stdout, "stdout at reset %d\n", seed)
		fmt.Fprintf(os.Stderr, "stderr at reset %d\n", seed)
	}
	c.t, c.total = 0, float64(seed%7)
	return c.obs(), nil
}

// Step adds the decisions, or misbehaves as the params say.
func (c *Env) Step(actions []core.Action) (core.StepResult, error) {
	if len(actions) != 2 {
		return core.StepResult{}, fmt.Errorf("want 2 actions, got %d", len(actions))
	}
	c.t++
	switch c.t {
	case c.p.ExitAtStep:
		slog.Error("exiting on purpose", "step", c.t)
		os.Exit(c.p.ExitCode)
	case c.p.HangAtStep:
		select {}
	case c.p.PanicAtStep:
		panic("counter: panicking on purpose")
	}
	for _, a := range actions {
		c.total += float64(a.Decision) + float64(len(a.Text))/1000 + float64(a.Usage.Tokens())/1e6
	}
	r := core.StepResult{Observations: c.obs(), Rewards: []float64{c.total, c.total / 3}, Terminated: c.t >= c.p.Steps}
	if r.Terminated {
		r.Metrics = map[string]float64{"total": c.total}
		r.Artifacts = map[string][]byte{"total.txt": fmt.Appendf(nil, "%g\n", c.total), "empty": {}}
	}
	return r, nil
}

// Truncate ends the episode early (core.Truncater).
func (c *Env) Truncate() (core.StepResult, error) {
	return core.StepResult{Observations: c.obs(), Truncated: true, Metrics: map[string]float64{"total": c.total}}, nil
}

// State returns the total.
func (c *Env) State() []float64 { return []float64{c.total} }

// Close does nothing.
func (c *Env) Close() error { return nil }

// Prompt builds a request from the agent's own text (core.Prompter).
func (c *Env) Prompt(agent, decision int) core.ChatRequest {
	temperature := 0.7
	if c.p.NaNPrompt {
		temperature = math.NaN()
	}
	return core.ChatRequest{
		Model:       "counter-model",
		Messages:    []core.Message{{Role: "system", Content: "count"}, {Role: "user", Content: c.obs()[agent].Text}},
		MaxTokens:   16 + decision,
		Temperature: temperature,
		Stop:        []string{"\n"},
		Agent:       agent,
		Decision:    c.Spec().Decisions[decision].Name,
		Tier:        "small",
		Seed:        uint64(c.t)*1000 + uint64(agent),
	}
}

// Simulate writes a number drawn from rng (core.Simulator).
func (c *Env) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	if decision != 1 {
		return core.SimCompletion{}, fmt.Errorf("counter: decision %d needs no text", decision)
	}
	n := rng.IntN(1000)
	return core.SimCompletion{Text: fmt.Sprintf("%s/%d: %d", req.Decision, agent, n), PromptTokens: len(req.Messages) * 10, CompletionTokens: n % 17}, nil
}

// Baseline returns "ones" (every legal agent says one) or "alternate"
// (decisions alternate with the step) (core.BaselineProvider).
func (c *Env) Baseline(name string) (core.Baseline, error) {
	switch name {
	case "ones", "alternate":
		return baseline{c: c, name: name}, nil
	}
	return nil, fmt.Errorf("counter: no baseline %q", name)
}

type baseline struct {
	c    *Env
	name string
}

// Act implements core.Baseline, or exits the process as the params say.
func (b baseline) Act(obs []core.Observation) ([]int, error) {
	if b.c.p.ExitInAct {
		slog.Error("exiting on purpose in Act", "baseline", b.name)
		os.Exit(b.c.p.ExitCode)
	}
	d := make([]int, len(obs))
	for i, o := range obs {
		want := 1
		if b.name == "alternate" {
			want = (b.c.t + i) % 2
		}
		if o.Legal(want) {
			d[i] = want
		}
	}
	return d, nil
}

// Sum is a reward function with one component, "total" (the episode's
// "total" metric). It exits the process with status 4 when the episode's
// metrics hold "crash", and fails when they hold "fail".
type Sum struct{}

// Name returns "counter.sum".
func (Sum) Name() string { return "counter.sum" }

// Components returns ["total"].
func (Sum) Components() []string { return []string{"total"} }

// RequiredMetrics returns ["total"], which the counter env reports.
func (Sum) RequiredMetrics() []string { return []string{"total"} }

// Score returns the total and, as a metric, the number of steps.
func (Sum) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	if _, ok := ep.Metrics["crash"]; ok {
		os.Exit(4)
	}
	if _, ok := ep.Metrics["fail"]; ok {
		return nil, nil, errors.New("episode has a fail metric")
	}
	return map[string]float64{"total": ep.Metrics["total"]}, map[string]float64{"steps": float64(ep.Steps)}, nil
}
