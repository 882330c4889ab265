package rollout

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
)

// chatterEnv is a team task where every agent writes every step (its only
// decision needs text), for MaxSteps steps. As a simulator it writes
// completions of 100–400 tokens drawn from the request's seed, and counts
// prompts 7 tokens above llm.EstimatePromptTokens (a tokenizer the
// runtime's estimate does not know).
type chatterEnv struct{ agents int }

const chatterPromptExtra = 7

func (e chatterEnv) Spec() core.EnvSpec {
	names := make([]string, e.agents)
	for i := range names {
		names[i] = fmt.Sprintf("w%d", i)
	}
	return core.EnvSpec{
		Name: "chatter", Agents: names, ObsSize: 1, MaxSteps: 20,
		Decisions:    []core.DecisionSpec{{Name: "write", NeedsText: true}},
		Capabilities: core.CapSimulate,
	}
}

func (e chatterEnv) obs() []core.Observation {
	o := make([]core.Observation, e.agents)
	for i := range o {
		o[i] = core.Observation{Features: []float64{1}, Text: fmt.Sprintf("Write part %d.", i)}
	}
	return o
}

func (e chatterEnv) Reset(uint64) ([]core.Observation, error) { return e.obs(), nil }
func (e chatterEnv) Step([]core.Action) (core.StepResult, error) {
	return core.StepResult{Observations: e.obs()}, nil
}
func (e chatterEnv) Close() error     { return nil }
func (e chatterEnv) State() []float64 { return nil }

func (e chatterEnv) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	n := 100 + rng.IntN(301)
	return core.SimCompletion{Text: strings.Repeat("word", n), PromptTokens: llm.EstimatePromptTokens(req.Messages) + chatterPromptExtra, CompletionTokens: n}, nil
}

type chatterSource struct{ agents int }

func (s chatterSource) Spec() core.EnvSpec      { return chatterEnv(s).Spec() }
func (s chatterSource) Open() (core.Env, error) { return chatterEnv(s), nil }
func (s chatterSource) Close() error            { return nil }

// stepsReward scores the steps played.
type stepsReward struct{}

func (stepsReward) Name() string         { return "steps" }
func (stepsReward) Components() []string { return []string{"steps"} }
func (stepsReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"steps": float64(ep.Steps)}, nil, nil
}

// wireLLM is a concurrent backend standing in for an endpoint: each call
// reports the estimated prompt and `completion` completion tokens
// (ignoring max_tokens when greedy, else stopping there) and the traffic
// `traffic`; call number failAt (1-based, 0 = never) fails with an
// *llm.CallError carrying failTraffic.
type wireLLM struct {
	completion          int
	greedy              bool
	traffic             core.Traffic
	failAt              int64
	failTraffic         core.Traffic
	calls, inFlight, hi atomic.Int64
}

func (l *wireLLM) Chat(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	n := l.calls.Add(1)
	if f := l.inFlight.Add(1); f > l.hi.Load() {
		l.hi.Store(f) // racy max, only read as "more than one"
	}
	defer l.inFlight.Add(-1)
	if n == l.failAt {
		return core.ChatResponse{}, &llm.CallError{Endpoint: "http://test/chat/completions", Status: 503, Attempts: 3, Retryable: true, Traffic: l.failTraffic}
	}
	c := l.completion
	if !l.greedy && req.MaxTokens > 0 {
		c = min(c, req.MaxTokens)
	}
	u := core.Usage{PromptTokens: llm.EstimatePromptTokens(req.Messages), CompletionTokens: c, Backend: "wire"}
	return core.ChatResponse{Text: strings.Repeat("x", 4*c), Usage: u, Traffic: l.traffic}, nil
}

func chatterSetup(agents int, b Budget, backend core.LLM) Setup {
	s := Setup{Name: "budget", Env: chatterSource{agents}, Rewards: []core.RewardFunc{stepsReward{}}, Budget: b, Seed: 3}
	if backend != nil {
		s.Agents = []AgentLLM{{Backend: backend}}
	}
	return s
}

// A token budget is hard: whatever the backend, no episode spends more
// than its budget plus the tokens of the one call that reached it. Four
// agents that each spend ~280 tokens per step in parallel (the old
// runtime let a whole step's calls run: 1120 tokens after step 1, under
// 1200, then 2240) stop within one call; a backend that stops at
// max_tokens and counts prompts as estimated never overshoots at all.
func TestBudgetIsHardWithParallelCalls(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		backend func() *wireLLM // nil: the sim
		budget  Budget
		// slack is how far past the budget an episode may go: one call's
		// tokens (greedy), or 0 (a backend that stops at max_tokens).
		slack func(call int) int
	}{
		{"greedy backend, team budget", func() *wireLLM { return &wireLLM{completion: 250, greedy: true} }, Budget{MaxTokens: 1200}, func(call int) int { return call }},
		{"capping backend, team budget", func() *wireLLM { return &wireLLM{completion: 250} }, Budget{MaxTokens: 1200}, func(int) int { return 0 }},
		{"greedy backend, agent budget", func() *wireLLM { return &wireLLM{completion: 250, greedy: true} }, Budget{MaxTokensPerAgent: 600}, func(call int) int { return call }},
		{"sim, team budget", nil, Budget{MaxTokens: 3000}, func(int) int { return chatterPromptExtra }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stoppedMidStep := 0
			for seed := uint64(1); seed <= 12; seed++ {
				var be core.LLM
				if tc.backend != nil {
					be = tc.backend()
				}
				s := chatterSetup(4, tc.budget, be)
				res, err := RunEpisode(ctx, s, nil, "random", seed, nil)
				if err != nil {
					t.Fatal(err)
				}
				if res.Failed {
					t.Fatalf("seed %d failed: %s", seed, res.Reason)
				}
				ep := res.Episode
				if !ep.BudgetStopped || res.Metrics[core.MetricBudgetStopped] != 1 || !ep.Truncated {
					t.Fatalf("seed %d: not budget-stopped after %d steps", seed, ep.Steps)
				}
				largest, total := 0, 0
				for _, c := range res.LLMCalls {
					largest = max(largest, c.Usage.Tokens())
				}
				for i, u := range ep.AgentUsage {
					total += u.Tokens()
					if b := tc.budget.MaxTokensPerAgent; b > 0 && u.Tokens() > b+tc.slack(u.Tokens()) {
						t.Errorf("seed %d: agent %d spent %d tokens, budget %d", seed, i, u.Tokens(), b)
					}
				}
				if tc.backend == nil {
					largest = 400 + 100 // the sim's largest completion and a prompt
				}
				if b := tc.budget.MaxTokens; b > 0 && total > b+tc.slack(largest) {
					t.Errorf("seed %d: %d tokens for a budget of %d (allowed overshoot %d)", seed, total, b, tc.slack(largest))
				}
				if got := int(res.Metrics[core.MetricLLMTokens]); got != total {
					t.Errorf("seed %d: llm_tokens %d, agents' usage sums to %d", seed, got, total)
				}
				if int(res.Metrics[core.MetricLLMCalls])%4 != 0 || tc.budget.MaxTokens == 0 {
					stoppedMidStep++
				}
				if w, ok := be.(*wireLLM); ok && w.hi.Load() > 1 {
					t.Errorf("seed %d: %d budgeted calls in flight at once", seed, w.hi.Load())
				}
			}
			if stoppedMidStep == 0 {
				t.Error("no episode stopped inside a step: the test does not exercise a step's calls against the budget")
			}
		})
	}
}

// Budgeted episodes are the same, to the bit, with one worker or three.
func TestBudgetDeterministicAcrossWorkers(t *testing.T) {
	ctx := context.Background()
	play := func(workers int) []EpisodeResult {
		s := chatterSetup(3, Budget{MaxTokens: 2500, MaxTokensPerAgent: 1000}, nil)
		s.Rollout.Workers = workers
		p, err := NewPool(&s)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		jobs := make([]Job, 9)
		for i := range jobs {
			jobs[i] = Job{Task: TrainTaskSeed(s.Seed, 0, i), Rollout: RolloutSeed(uint64(i), 0)}
		}
		res, err := p.play(ctx, jobs, newActorFor("random", nil), false)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	one, three := play(1), play(3)
	for i := range one {
		a, b := one[i], three[i]
		if a.Failed || b.Failed {
			t.Fatalf("job %d failed: %q %q", i, a.Reason, b.Reason)
		}
		if !reflect.DeepEqual(a.Episode.AgentUsage, b.Episode.AgentUsage) || !reflect.DeepEqual(a.Metrics, b.Metrics) || a.Episode.Steps != b.Episode.Steps {
			t.Errorf("job %d differs between 1 and 3 workers: %d steps %v vs %d steps %v", i, a.Episode.Steps, a.Episode.AgentUsage, b.Episode.Steps, b.Episode.AgentUsage)
		}
	}
}

// Every call's traffic is summed per episode, a failed call's (from its
// *llm.CallError) and a failed episode's included, and reported as metrics.
func TestEpisodeTraffic(t *testing.T) {
	ctx := context.Background()
	per := core.Traffic{Requests: 2, Retries: 1, RateLimited: 1, WaitSeconds: 0.25}
	ok := &wireLLM{completion: 10, traffic: per}
	res, err := RunEpisode(ctx, chatterSetup(2, Budget{}, ok), nil, "random", 1, nil)
	if err != nil || res.Failed {
		t.Fatalf("err %v, failed %q", err, res.Reason)
	}
	calls := int(ok.calls.Load())
	if calls != 2*20 {
		t.Fatalf("%d calls, want 40 (2 agents × 20 steps)", calls)
	}
	want := core.Traffic{Requests: 2 * calls, Retries: calls, RateLimited: calls, WaitSeconds: 0.25 * float64(calls)}
	if res.Traffic != want {
		t.Errorf("traffic %+v, want %+v", res.Traffic, want)
	}
	for k, v := range want.Metrics() {
		if res.Metrics[k] != v {
			t.Errorf("metric %s = %v, want %v", k, res.Metrics[k], v)
		}
	}

	failing := &wireLLM{completion: 10, traffic: per, failAt: 5, failTraffic: core.Traffic{Requests: 3, Retries: 2, ServerErrors: 3, WaitSeconds: 1.5}}
	res, err = RunEpisode(ctx, chatterSetup(2, Budget{}, failing), nil, "random", 1, nil)
	if err == nil || !res.Failed || !strings.Contains(res.Reason, "openai: POST http://test") {
		t.Fatalf("want a failed episode, got failed=%v %q (err %v)", res.Failed, res.Reason, err)
	}
	// Calls 1–4 succeeded, call 5 failed, and its step partner (call 6,
	// concurrent) may or may not have run; all of it is counted.
	n := int(failing.calls.Load())
	wantFail := core.Traffic{Requests: 2*(n-1) + 3, Retries: (n - 1) + 2, RateLimited: n - 1, ServerErrors: 3, WaitSeconds: 0.25*float64(n-1) + 1.5}
	if res.Traffic != wantFail {
		t.Errorf("failed episode's traffic %+v, want %+v (%d calls)", res.Traffic, wantFail, n)
	}

	sim, err := RunEpisode(ctx, chatterSetup(2, Budget{}, nil), nil, "random", 1, nil)
	if err != nil || sim.Failed {
		t.Fatalf("sim: %v %q", err, sim.Reason)
	}
	if _, ok := sim.Metrics[core.MetricLLMRequests]; ok || sim.Traffic != (core.Traffic{}) {
		t.Errorf("the simulated LLM reported traffic: %+v %v", sim.Traffic, sim.Metrics)
	}
}
