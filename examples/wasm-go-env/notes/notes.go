// Package notes is a small collaborative task written as an ordinary
// core.Env, the way a third party would write one: each agent writes one
// note with its LLM, then one agent submits the team's notes. The same code
// runs in-process and, through sdk/wasmguest, as a Wasm module (see the
// main package next to this one).
//
// Decisions: "wait", "write" (needs text), "submit" (legal once every agent
// has written). Features per agent: [I have written, fraction of the team
// that has written, steps taken / max_steps]. Each step costs one virtual
// second plus the slowest LLM call of the step; the episode's metrics are
// makespan_s, reference_makespan_s (one agent writing every note in turn),
// tokens, reference_tokens and "coverage" (the fraction of agents whose
// note mentions the episode's topic, which the seed picks).
//
// The env implements core.Truncater, core.Prompter, core.Simulator and
// core.BaselineProvider (baseline "sop": write, then submit).
//
// Params: agents (default 2, 1..16), max_steps (default 10, 2..1000).
package notes

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// Decision indices.
const (
	Wait = iota
	Write
	Submit
)

var topics = []string{"latency", "caching", "testing", "naming", "logging", "errors"}

// Params are the env's parameters.
type Params struct {
	Agents   int `json:"agents"`
	MaxSteps int `json:"max_steps"`
}

// Env is one instance of the notes task.
type Env struct {
	p     Params
	spec  core.EnvSpec
	topic string
	notes []string
	t     int
	clock time.Duration // virtual time
	ref   time.Duration // single-agent reference time
	tok   int
	done  bool
	reset bool
}

// New makes an env from params.
func New(params map[string]any) (core.Env, error) {
	p := Params{Agents: 2, MaxSteps: 10}
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	if p.Agents < 1 || p.Agents > 16 {
		return nil, fmt.Errorf("notes: params: key \"agents\": want 1..16, got %d", p.Agents)
	}
	if p.MaxSteps < 2 || p.MaxSteps > 1000 {
		return nil, fmt.Errorf("notes: params: key \"max_steps\": want 2..1000, got %d", p.MaxSteps)
	}
	e := &Env{p: p}
	e.spec = core.EnvSpec{
		Name:      "notes",
		ObsSize:   3,
		Decisions: []core.DecisionSpec{{Name: "wait"}, {Name: "write", NeedsText: true}, {Name: "submit"}},
		StateSize: p.Agents + 1,
		Metrics:   []string{"makespan_s", "reference_makespan_s", "tokens", "reference_tokens", "coverage"},
		Baselines: []string{"sop"},
		MaxSteps:  p.MaxSteps,
		// Every optional interface the env implements, declared: the
		// runtime uses only declared ones, in-process and as a plugin (the
		// guest kit advertises exactly these to the host), and a Go env
		// that implements one without declaring it fails to load.
		Capabilities: core.CapTruncate | core.CapPrompt | core.CapSimulate | core.CapBaseline,
	}
	for i := range p.Agents {
		e.spec.Agents = append(e.spec.Agents, fmt.Sprintf("writer_%d", i))
	}
	return e, nil
}

// Spec describes the env.
func (e *Env) Spec() core.EnvSpec { return e.spec }

// Reset starts an episode; the seed picks the topic.
func (e *Env) Reset(seed uint64) ([]core.Observation, error) {
	rng := rand.New(rand.NewPCG(seed, 1))
	e.topic = topics[rng.IntN(len(topics))]
	e.notes = make([]string, e.p.Agents)
	e.t, e.clock, e.ref, e.tok, e.done, e.reset = 0, 0, 0, 0, false, true
	return e.observations(), nil
}

func (e *Env) written() int {
	n := 0
	for _, s := range e.notes {
		if s != "" {
			n++
		}
	}
	return n
}

func (e *Env) observations() []core.Observation {
	obs := make([]core.Observation, e.p.Agents)
	all := e.written() == e.p.Agents
	frac := float64(e.written()) / float64(e.p.Agents)
	for i := range obs {
		mine := 0.0
		if e.notes[i] != "" {
			mine = 1
		}
		obs[i] = core.Observation{
			Features: []float64{mine, frac, float64(e.t) / float64(e.p.MaxSteps)},
			Mask:     []bool{true, e.notes[i] == "", all},
			Text:     e.context(i),
		}
	}
	return obs
}

func (e *Env) context(agent int) string {
	s := fmt.Sprintf("You are writer %d of %d. The topic is %q.", agent, e.p.Agents, e.topic)
	if e.notes[agent] != "" {
		s += " Your note: " + e.notes[agent]
	}
	return s
}

// Step applies the joint action.
func (e *Env) Step(actions []core.Action) (core.StepResult, error) {
	switch {
	case !e.reset:
		return core.StepResult{}, errors.New("notes: Step before Reset")
	case e.done:
		return core.StepResult{}, errors.New("notes: Step after the episode ended")
	case len(actions) != e.p.Agents:
		return core.StepResult{}, fmt.Errorf("notes: %d actions for %d agents", len(actions), e.p.Agents)
	}
	all := e.written() == e.p.Agents
	slowest := time.Duration(0)
	submitted := false
	for i, a := range actions {
		switch a.Decision {
		case Wait:
		case Write:
			if e.notes[i] != "" {
				return core.StepResult{}, fmt.Errorf("notes: agent %d: write after writing", i)
			}
			if strings.TrimSpace(a.Text) == "" {
				return core.StepResult{}, fmt.Errorf("notes: agent %d: write with empty text", i)
			}
			e.notes[i] = a.Text
			e.tok += a.Usage.Tokens()
			slowest = max(slowest, a.Usage.Latency)
			e.ref += a.Usage.Latency
		case Submit:
			if !all {
				return core.StepResult{}, fmt.Errorf("notes: agent %d: submit before every agent has written", i)
			}
			submitted = true
		default:
			return core.StepResult{}, fmt.Errorf("notes: agent %d: decision %d out of range", i, a.Decision)
		}
	}
	e.t++
	e.clock += time.Second + slowest
	res := core.StepResult{Observations: e.observations()}
	switch {
	case submitted:
		res.Terminated = true
	case e.t >= e.p.MaxSteps:
		res.Truncated = true
	}
	if res.Done() {
		e.finish(&res)
	}
	return res, nil
}

func (e *Env) finish(res *core.StepResult) {
	e.done = true
	covered := 0
	var doc strings.Builder
	for i, n := range e.notes {
		if strings.Contains(strings.ToLower(n), e.topic) {
			covered++
		}
		fmt.Fprintf(&doc, "## writer %d\n\n%s\n\n", i, n)
	}
	res.Metrics = map[string]float64{
		"makespan_s":           e.clock.Seconds(),
		"reference_makespan_s": (e.ref + time.Duration(e.p.Agents+1)*time.Second).Seconds(),
		"tokens":               float64(e.tok),
		"reference_tokens":     float64(e.tok),
		"coverage":             float64(covered) / float64(e.p.Agents),
	}
	res.Artifacts = map[string][]byte{"notes.md": []byte(doc.String())}
}

// Truncate ends the episode now.
func (e *Env) Truncate() (core.StepResult, error) {
	if !e.reset {
		return core.StepResult{}, errors.New("notes: Truncate before Reset")
	}
	res := core.StepResult{Observations: e.observations(), Truncated: true}
	e.finish(&res)
	return res, nil
}

// State is [each agent has written…, steps / max_steps].
func (e *Env) State() []float64 {
	s := make([]float64, e.p.Agents+1)
	for i, n := range e.notes {
		if n != "" {
			s[i] = 1
		}
	}
	s[e.p.Agents] = float64(e.t) / float64(e.p.MaxSteps)
	return s
}

// Close does nothing.
func (e *Env) Close() error { return nil }

// Prompt builds the write request from the agent's own context.
func (e *Env) Prompt(agent, decision int) core.ChatRequest {
	return core.ChatRequest{
		Messages:  []core.Message{{Role: "user", Content: e.context(agent) + " Write your note in one sentence."}},
		MaxTokens: 64,
		Agent:     agent,
		Decision:  e.spec.Decisions[decision].Name,
	}
}

// Simulate writes a plausible note: it mentions the topic four times in
// five.
func (e *Env) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	if decision != Write {
		return core.SimCompletion{}, fmt.Errorf("notes: decision %d needs no text", decision)
	}
	subject := e.topic
	if rng.IntN(5) == 0 {
		subject = topics[rng.IntN(len(topics))]
	}
	text := fmt.Sprintf("Writer %d thinks %s deserves care.", agent, subject)
	return core.SimCompletion{Text: text, PromptTokens: len(strings.Fields(req.Messages[0].Content)), CompletionTokens: len(strings.Fields(text))}, nil
}

// Baseline returns the "sop" policy: write, then submit.
func (e *Env) Baseline(name string) (core.Baseline, error) {
	if name != "sop" {
		return nil, fmt.Errorf("notes: no baseline %q", name)
	}
	return sop{}, nil
}

type sop struct{}

// Act implements core.Baseline: every agent that may write writes; agent 0
// submits once nobody can.
func (sop) Act(obs []core.Observation) ([]int, error) {
	d := make([]int, len(obs))
	for i, o := range obs {
		switch {
		case o.Legal(Write):
			d[i] = Write
		case o.Legal(Submit) && i == 0:
			d[i] = Submit
		}
	}
	return d, nil
}
