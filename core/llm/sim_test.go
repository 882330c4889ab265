package llm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// echoSim writes text from its inputs and three random draws.
type echoSim struct {
	mu    sync.Mutex
	calls []int // decision indices seen
	tok   [2]int
	err   error
}

func (s *echoSim) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	s.mu.Lock()
	s.calls = append(s.calls, decision)
	s.mu.Unlock()
	if s.err != nil {
		return core.SimCompletion{}, s.err
	}
	text := fmt.Sprintf("agent %d decision %d: %x %x %x", agent, decision, rng.Uint64(), rng.Uint64(), rng.Uint64())
	return core.SimCompletion{Text: text, PromptTokens: s.tok[0], CompletionTokens: s.tok[1]}, nil
}

var simSpec = core.EnvSpec{
	Name:   "toy",
	Agents: []string{"a", "b"},
	Decisions: []core.DecisionSpec{
		{Name: "wait"},
		{Name: "draft", NeedsText: true},
		{Name: "review", NeedsText: true, Tier: "small"},
	},
}

func simReq(agent int, decision string, seed uint64) core.ChatRequest {
	return core.ChatRequest{Messages: []core.Message{{Role: "user", Content: "write"}}, Agent: agent, Decision: decision, Seed: seed}
}

func TestSimIsDeterministicBySeed(t *testing.T) {
	es := &echoSim{tok: [2]int{100, 40}}
	s, err := NewSim(es, simSpec, DefaultConfig().Sim, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := s.Chat(context.Background(), simReq(1, "draft", 7))
	b, _ := s.Chat(context.Background(), simReq(1, "draft", 7))
	c, _ := s.Chat(context.Background(), simReq(1, "draft", 8))
	if a != b {
		t.Errorf("same seed gave %+v and %+v", a, b)
	}
	if a.Text == c.Text {
		t.Errorf("seeds 7 and 8 gave the same text %q", a.Text)
	}
	if !strings.HasPrefix(a.Text, "agent 1 decision 1:") || es.calls[0] != 1 {
		t.Errorf("decision name not mapped to index 1: %q, %v", a.Text, es.calls)
	}
	if a.Usage.Backend != "sim" || a.Usage.PromptTokens != 100 || a.Usage.CompletionTokens != 40 {
		t.Errorf("usage %+v", a.Usage)
	}
	// 0.8 s + 100/2000 s + 40/40 s.
	if want := 800*time.Millisecond + 50*time.Millisecond + time.Second; a.Usage.Latency != want {
		t.Errorf("latency %v, want %v", a.Usage.Latency, want)
	}
}

func TestSimTiers(t *testing.T) {
	es := &echoSim{tok: [2]int{1000, 100}}
	fast := LatencyModel{Base: 100 * time.Millisecond, PrefillTPS: 10000, DecodeTPS: 200}
	small := LatencyModel{Base: 200 * time.Millisecond, PrefillTPS: 5000, DecodeTPS: 100}
	s, err := NewSim(es, simSpec, fast, map[string]LatencyModel{"small": small})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		decision, tier string
		want           time.Duration
	}{
		{"draft", "", fast.Latency(1000, 100)},         // default tier from config
		{"review", "", small.Latency(1000, 100)},       // the decision's tier
		{"draft", "small", small.Latency(1000, 100)},   // the request's tier wins
		{"review", "huge", fast.Latency(1000, 100)},    // unknown tier: default
		{"review", "default", fast.Latency(1000, 100)}, // explicit default
	}
	for _, c := range cases {
		req := simReq(0, c.decision, 1)
		req.Tier = c.tier
		resp, err := s.Chat(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage.Latency != c.want {
			t.Errorf("%s tier %q: latency %v, want %v", c.decision, c.tier, resp.Usage.Latency, c.want)
		}
	}
	if got := small.Latency(1000, 100); got != 200*time.Millisecond+200*time.Millisecond+time.Second {
		t.Errorf("small.Latency = %v", got)
	}
}

func TestSimErrors(t *testing.T) {
	es := &echoSim{}
	s, _ := NewSim(es, simSpec, DefaultConfig().Sim, nil)
	if _, err := s.Chat(context.Background(), simReq(0, "fly", 1)); err == nil || !strings.Contains(err.Error(), `no decision "fly" (have wait, draft, review)`) {
		t.Errorf("unknown decision: %v", err)
	}
	if _, err := s.Chat(context.Background(), simReq(2, "draft", 1)); err == nil || !strings.Contains(err.Error(), "agent 2 out of range") {
		t.Errorf("bad agent: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Chat(ctx, simReq(0, "draft", 1)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	boom := errors.New("boom")
	s2, _ := NewSim(&echoSim{err: boom}, simSpec, DefaultConfig().Sim, nil)
	if _, err := s2.Chat(context.Background(), simReq(0, "draft", 1)); !errors.Is(err, boom) || !strings.Contains(err.Error(), `decision "draft"`) {
		t.Errorf("simulator error: %v", err)
	}
	if f := s.accounting().Total().Failures; f != 3 {
		t.Errorf("failures %d, want 3", f)
	}
	def := DefaultConfig().Sim
	for name, tiers := range map[string]map[string]LatencyModel{
		`tier "x": prefill_tps`:              {"x": {Base: time.Second, DecodeTPS: 1}},
		`tier "y": decode_tps`:               {"y": {PrefillTPS: 1, DecodeTPS: -1}},
		`tier "z": base`:                     {"z": {Base: -1, PrefillTPS: 1, DecodeTPS: 1}},
		`tier "default" is the default tier`: {"default": {Base: 1, PrefillTPS: 1, DecodeTPS: 1}},
	} {
		if _, err := NewSim(es, simSpec, def, tiers); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("want error naming %q, got %v", name, err)
		}
	}
	if _, err := NewSim(es, simSpec, LatencyModel{}, nil); err == nil || !strings.Contains(err.Error(), "default tier: prefill_tps") {
		t.Errorf("zero default tier: %v", err)
	}
	if _, err := NewSim(nil, simSpec, DefaultConfig().Sim, nil); err == nil || !strings.Contains(err.Error(), "no simulator (the env must implement core.Simulator and its spec declare core.CapSimulate)") {
		t.Errorf("nil simulator: %v", err)
	}
}

func TestSimEstimatesMissingTokensAndNeverSleeps(t *testing.T) {
	s, _ := NewSim(&echoSim{}, simSpec, DefaultConfig().Sim, nil)
	start := time.Now()
	var virtual time.Duration
	for i := range 1000 {
		resp, err := s.Chat(context.Background(), simReq(i%2, "draft", uint64(i)))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage.PromptTokens != EstimatePromptTokens(simReq(0, "", 0).Messages) || resp.Usage.CompletionTokens != estimateTokens(resp.Text) {
			t.Fatalf("usage %+v for %q", resp.Usage, resp.Text)
		}
		virtual += resp.Usage.Latency
	}
	if wall := time.Since(start); testenv.Timing() && wall > virtual/1000 {
		t.Errorf("1000 calls took %v of wall time for %v of virtual time", wall, virtual)
	}
	if tot := s.accounting().Total(); tot.Calls != 1000 || tot.EstimatedUsage != 1000 || tot.Latency != virtual {
		t.Errorf("accounting %+v", tot)
	}
}

// TestSimStopsAtMaxTokens checks that a completion longer than the
// request's max_tokens is cut to it, text and count, as an endpoint does.
func TestSimStopsAtMaxTokens(t *testing.T) {
	es := &echoSim{tok: [2]int{100, 40}}
	s, err := NewSim(es, simSpec, DefaultConfig().Sim, nil)
	if err != nil {
		t.Fatal(err)
	}
	full, err := s.Chat(context.Background(), simReq(0, "draft", 7))
	if err != nil {
		t.Fatal(err)
	}
	req := simReq(0, "draft", 7)
	req.MaxTokens = 10
	cut, err := s.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if cut.Usage.CompletionTokens != 10 || cut.Usage.PromptTokens != 100 {
		t.Errorf("usage %+v, want 100 prompt and 10 completion tokens", cut.Usage)
	}
	if want := full.Text[:len(full.Text)*10/40]; cut.Text != want {
		t.Errorf("text %q, want the first quarter of %q", cut.Text, full.Text)
	}
	req.MaxTokens = 40 // exactly enough: nothing cut
	if same, _ := s.Chat(context.Background(), req); same.Text != full.Text || same.Usage.CompletionTokens != 40 {
		t.Errorf("max_tokens 40 changed a 40-token completion: %+v", same)
	}
	if got := cutText("aé", 1, 2); got != "a" { // byte 1 of 3 starts é; 3*1/2 = 1
		t.Errorf("cutText(\"aé\", 1, 2) = %q, want \"a\"", got)
	}
	if got := cutText("éa", 1, 3); got != "" { // 3*1/3 = 1 is inside é
		t.Errorf("cutText(\"éa\", 1, 3) = %q, want \"\"", got)
	}
}
