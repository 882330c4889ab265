package wasmguest

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/wasmabi"
)

// These tests drive the kit's server natively, the way the exports do in a
// Wasm module: write input into the buffer, call, read the reply.

type fakeEnv struct {
	text    string // observation text
	t       int
	panicAt int
	nilMap  bool // panic at panicAt with a runtime error, not panic("boom")
}

func (e *fakeEnv) Spec() core.EnvSpec {
	return core.EnvSpec{Name: "fake", Agents: []string{"a", "b"}, ObsSize: 1,
		Decisions: []core.DecisionSpec{{Name: "x"}, {Name: "y", NeedsText: true}}, StateSize: 2, Baselines: []string{"zero", "stuck"},
		Capabilities: core.CapPrompt | core.CapSimulate | core.CapBaseline}
}
func (e *fakeEnv) obs() []core.Observation {
	return []core.Observation{{Features: []float64{float64(e.t)}, Text: e.text}, {Features: []float64{-1}, Mask: []bool{true, false}}}
}
func (e *fakeEnv) Reset(seed uint64) ([]core.Observation, error) {
	e.t = int(seed)
	return e.obs(), nil
}
func (e *fakeEnv) Step(a []core.Action) (core.StepResult, error) {
	e.t++
	if e.t == e.panicAt {
		if e.nilMap {
			var m map[string]int
			m["x"] = 1
		}
		panic("boom")
	}
	if a[0].Decision > 1 {
		return core.StepResult{}, errors.New("fake: bad decision")
	}
	return core.StepResult{Observations: e.obs(), Terminated: a[1].Text == "end", Metrics: map[string]float64{"t": float64(e.t)}}, nil
}
func (e *fakeEnv) State() []float64 { return []float64{float64(e.t), 0} }
func (e *fakeEnv) Close() error     { return nil }
func (e *fakeEnv) Prompt(agent, decision int) core.ChatRequest {
	return core.ChatRequest{Agent: agent, Messages: []core.Message{{Role: "user", Content: "go"}}}
}
func (e *fakeEnv) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	return core.SimCompletion{Text: req.Messages[0].Content + "!", CompletionTokens: rng.IntN(1000)}, nil
}
func (e *fakeEnv) Baseline(name string) (core.Baseline, error) {
	switch name {
	case "zero":
		return zero{}, nil
	case "stuck":
		return stuck{}, nil
	}
	return nil, errors.New("no such baseline")
}

// zero decides 0 for every agent.
type zero struct{}

func (zero) Act(obs []core.Observation) ([]int, error) { return make([]int, len(obs)), nil }

// stuck cannot decide.
type stuck struct{}

func (stuck) Act([]core.Observation) ([]int, error) { return nil, errors.New("fake: stuck") }

func newTestServer(env *fakeEnv) *server {
	s := newServer()
	s.envFactory = func(params map[string]any) (core.Env, error) {
		if params["fail"] == true {
			return nil, errors.New("fake: refused")
		}
		return env, nil
	}
	return s
}

func (s *server) put(t *testing.T, p []byte) int {
	t.Helper()
	if s.grow(len(p)) != 0 {
		t.Fatal("grow failed")
	}
	copy(s.buf, p)
	return len(p)
}

func errMsg(s *server) string { return wasmabi.DecodeError(s.buf) }

var shape = wasmabi.Shape{Agents: 2, ObsSize: 1, Decisions: 2}

func TestEnvLifecycle(t *testing.T) {
	env := &fakeEnv{text: "hi"}
	s := newTestServer(env)
	if r := s.step(0); r != wasmabi.CodeBadState || !strings.Contains(errMsg(s), "step before reset") {
		t.Fatalf("step before open: %d %q", r, errMsg(s))
	}
	n := s.open(openEnv, s.put(t, []byte(`{"x":1}`)))
	if n <= 0 {
		t.Fatalf("open: %d %q", n, errMsg(s))
	}
	var spec wasmabi.Spec
	if err := json.Unmarshal(s.buf[:n], &spec); err != nil {
		t.Fatal(err)
	}
	if spec.ABI != 1 || spec.Env.Name != "fake" || spec.Reward != nil ||
		!reflect.DeepEqual(spec.Capabilities, []string{"prompt", "simulate", "baseline"}) {
		t.Fatalf("spec %+v", spec)
	}
	n = s.resetEnv(3)
	obs, err := wasmabi.DecodeObservations(s.buf[:n], shape)
	if err != nil || obs[0].Features[0] != 3 || obs[0].Text != "hi" || obs[1].Mask[1] {
		t.Fatalf("reset: %+v %v", obs, err)
	}
	acts := []core.Action{{Decision: 1, Usage: core.Usage{Backend: "sim"}}, {Decision: 0, Text: "end"}}
	n = s.step(s.put(t, wasmabi.AppendActions(nil, acts)))
	res, err := wasmabi.DecodeStepResult(s.buf[:n], shape)
	if err != nil || !res.Terminated || res.Metrics["t"] != 4 {
		t.Fatalf("step: %+v %v", res, err)
	}
	if r := s.step(s.put(t, wasmabi.AppendActions(nil, []core.Action{{Decision: 2}, {}}))); r != wasmabi.CodeFailed || errMsg(s) != "fake: bad decision" {
		t.Fatalf("env error: %d %q", r, errMsg(s))
	}
	if r := s.step(s.put(t, []byte{1, 2, 3})); r != wasmabi.CodeBadInput || !strings.Contains(errMsg(s), "joint action") {
		t.Fatalf("garbage input: %d %q", r, errMsg(s))
	}
	n = s.state()
	if st, err := wasmabi.DecodeFloats(s.buf[:n], 2); err != nil || st[0] != 5 {
		t.Fatalf("state %v %v", st, err)
	}
	if r := s.truncate(); r != wasmabi.CodeUnsupported || errMsg(s) != "truncate: the env's spec does not declare core.CapTruncate (core.Truncater)" {
		t.Fatalf("truncate of an env without Truncater: %d %q", r, errMsg(s))
	}
	if s.close() != 0 || s.env != nil {
		t.Fatal("close")
	}
}

func TestOptionalCalls(t *testing.T) {
	s := newTestServer(&fakeEnv{})
	s.open(openEnv, 0)
	s.resetEnv(0)
	n := s.prompt(1, 1)
	var req core.ChatRequest
	if err := json.Unmarshal(s.buf[:n], &req); err != nil || req.Agent != 1 {
		t.Fatalf("prompt: %+v %v", req, err)
	}
	call, _ := json.Marshal(wasmabi.SimulateCall{Agent: 0, Decision: 1, Request: req, Seed: 42})
	n = s.simulate(s.put(t, call))
	var sim wasmabi.SimResult
	if err := json.Unmarshal(s.buf[:n], &sim); err != nil || sim.Text != "go!" {
		t.Fatalf("simulate: %+v %v", sim, err)
	}
	want := rand.New(rand.NewPCG(42, wasmabi.SeedStream)).IntN(1000)
	if sim.CompletionTokens != want {
		t.Errorf("simulate rng: %d, want %d", sim.CompletionTokens, want)
	}
	in, _ := wasmabi.AppendBaselineCall(nil, "zero", (&fakeEnv{}).obs(), shape)
	n = s.baseline(s.put(t, in))
	if d, err := wasmabi.DecodeDecisions(s.buf[:n], 2); err != nil || d[0] != 0 {
		t.Fatalf("baseline: %v %v", d, err)
	}
	in, _ = wasmabi.AppendBaselineCall(nil, "other", (&fakeEnv{}).obs(), shape)
	if r := s.baseline(s.put(t, in)); r != wasmabi.CodeFailed || errMsg(s) != "no such baseline" {
		t.Fatalf("unknown baseline: %d %q", r, errMsg(s))
	}
	// A baseline's error is the call's failure, not a reply of decisions.
	in, _ = wasmabi.AppendBaselineCall(nil, "stuck", (&fakeEnv{}).obs(), shape)
	if r := s.baseline(s.put(t, in)); r != wasmabi.CodeFailed || errMsg(s) != "fake: stuck" {
		t.Fatalf("failing baseline: %d %q", r, errMsg(s))
	}
}

func TestPanicIsCaught(t *testing.T) {
	s := newTestServer(&fakeEnv{panicAt: 1})
	s.open(openEnv, 0)
	s.resetEnv(0)
	r := s.step(s.put(t, wasmabi.AppendActions(nil, make([]core.Action, 2))))
	// The first line is the value and the panicking frame (file name, no
	// directory); the stack follows after a blank line, for the host's
	// debug log.
	head, stack, ok := strings.Cut(errMsg(s), "\n\n")
	want := "boom (at github.com/troupe-dev/troupe/sdk/wasmguest.(*fakeEnv).Step wasmguest_test.go:"
	if r != wasmabi.CodePanic || !ok || !strings.HasPrefix(head, want) || strings.Contains(head, "\n") || !strings.Contains(stack, "goroutine") {
		t.Fatalf("panic: %d %q; want a first line beginning %q, then the stack", r, errMsg(s), want)
	}
	// A runtime error (nil map write) names the user's frame, not the
	// runtime's.
	s = newTestServer(&fakeEnv{panicAt: 1, nilMap: true})
	s.open(openEnv, 0)
	s.resetEnv(0)
	s.step(s.put(t, wasmabi.AppendActions(nil, make([]core.Action, 2))))
	head, _, _ = strings.Cut(errMsg(s), "\n\n")
	if want := "assignment to entry in nil map (at github.com/troupe-dev/troupe/sdk/wasmguest.(*fakeEnv).Step wasmguest_test.go:"; !strings.HasPrefix(head, want) {
		t.Fatalf("runtime panic: %q; want a first line beginning %q", head, want)
	}
}

func TestLargeReplyGrowsBuffer(t *testing.T) {
	big := strings.Repeat("x", 3*initialBufferSize)
	s := newTestServer(&fakeEnv{text: big})
	s.open(openEnv, 0)
	n := s.resetEnv(0)
	if int(n) <= initialBufferSize || len(s.buf) < int(n) {
		t.Fatalf("reply %d bytes, buffer %d", n, len(s.buf))
	}
	obs, err := wasmabi.DecodeObservations(s.buf[:n], shape)
	if err != nil || obs[0].Text != big {
		t.Fatalf("large reply: %v", err)
	}
	if s.grow(-1) != wasmabi.CodeNoMemory {
		t.Error("negative grow accepted")
	}
}

func TestOpenErrors(t *testing.T) {
	s := newServer()
	if r := s.open(openEnv, 0); r != wasmabi.CodeBadState || !strings.Contains(errMsg(s), "call wasmguest.ServeEnv or ServeReward from an init function") {
		t.Fatalf("nothing registered: %d %q", r, errMsg(s))
	}
	s = newTestServer(&fakeEnv{})
	if r := s.open(openEnv, s.put(t, []byte(`{"fail":true}`))); r != wasmabi.CodeFailed || errMsg(s) != "fake: refused" {
		t.Fatalf("factory error: %d %q", r, errMsg(s))
	}
	if r := s.open(openEnv, s.put(t, []byte(`[1]`))); r != wasmabi.CodeBadInput || !strings.Contains(errMsg(s), "params") {
		t.Fatalf("bad params: %d %q", r, errMsg(s))
	}
	if r := s.open(7, 0); r != wasmabi.CodeBadInput || !strings.Contains(errMsg(s), "unknown kind 7") {
		t.Fatalf("bad kind: %d %q", r, errMsg(s))
	}
	if r := s.open(openReward, 0); r != wasmabi.CodeUnsupported {
		t.Fatalf("reward from an env-only module: %d %q", r, errMsg(s))
	}
	if r := s.open(openEnv, 1<<30); r != wasmabi.CodeBadInput {
		t.Fatalf("params beyond the buffer: %d", r)
	}
}

// truncatingEnv implements core.Truncater, which its spec (fakeEnv's)
// does not declare.
type truncatingEnv struct{ *fakeEnv }

func (truncatingEnv) Truncate() (core.StepResult, error) { return core.StepResult{}, nil }

// An env that implements an optional interface without declaring it fails
// open, naming the interface and the capability to declare, instead of
// losing the interface silently.
func TestOpenUndeclaredInterface(t *testing.T) {
	s := newServer()
	s.envFactory = func(map[string]any) (core.Env, error) { return truncatingEnv{&fakeEnv{}}, nil }
	r := s.open(openEnv, 0)
	want := "env fake implements core.Truncater but its spec does not declare core.CapTruncate; add it to EnvSpec.Capabilities"
	if r != wasmabi.CodeFailed || errMsg(s) != want {
		t.Fatalf("open: %d %q; want %d %q", r, errMsg(s), wasmabi.CodeFailed, want)
	}
	if s.env != nil {
		t.Fatal("the refused env stays open")
	}
}

type sumReward struct{}

func (sumReward) Name() string         { return "sum" }
func (sumReward) Components() []string { return []string{"quality"} }
func (sumReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"quality": ep.AgentReturns[0] + ep.AgentReturns[1]}, nil, nil
}

func TestReward(t *testing.T) {
	s := newServer()
	s.rewardFactory = func(map[string]any) (core.RewardFunc, error) { return sumReward{}, nil }
	if r := s.score(0); r != wasmabi.CodeBadState {
		t.Fatalf("score before open: %d", r)
	}
	n := s.open(openDescribe, 0)
	var spec wasmabi.Spec
	if err := json.Unmarshal(s.buf[:n], &spec); err != nil || spec.Env != nil || spec.Reward.Name != "sum" {
		t.Fatalf("describe: %s %v", s.buf[:n], err)
	}
	n = s.score(s.put(t, wasmabi.AppendEpisode(nil, &core.Episode{AgentReturns: []float64{1, 2.5}})))
	c, _, err := wasmabi.DecodeScore(s.buf[:n])
	if err != nil || c["quality"] != 3.5 {
		t.Fatalf("score %v %v", c, err)
	}
}
