package rollout

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
)

// specOnly is an env source that only has a spec: what Setup.Validate and
// the checks of Evaluate read before any env is opened.
type specOnly core.EnvSpec

func (s specOnly) Spec() core.EnvSpec      { return core.EnvSpec(s) }
func (s specOnly) Open() (core.Env, error) { return nil, errors.New("specOnly: no env to open") }
func (s specOnly) Close() error            { return nil }

func stubSetup() Setup {
	spec := core.EnvSpec{
		Name: "stub", Agents: []string{"a", "b"}, ObsSize: 1,
		Decisions: []core.DecisionSpec{{Name: "x"}}, Baselines: []string{"sop"}, Capabilities: core.CapBaseline,
	}
	return Setup{Env: specOnly(spec), Rewards: []core.RewardFunc{manyComponents{"a": 1}}, Weights: map[string]float64{"a": 1}, Rollout: DefaultConfig()}
}

// wantSettingError checks that err holds a *core.SettingError with key
// and that its text contains text.
func wantSettingError(t *testing.T, err error, key, text string) {
	t.Helper()
	se, ok := errors.AsType[*core.SettingError](err)
	if !ok || se.Key != key || !strings.Contains(err.Error(), text) {
		t.Errorf("got %v; want a *core.SettingError about %s saying %q", err, key, text)
	}
}

// Setup.Validate names the table of a bad setting in the key of the
// *core.SettingError it returns, and the agent of a bad LLM config.
func TestSetupSettingErrors(t *testing.T) {
	s := stubSetup()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	s.Budget.MaxTokens = -1
	wantSettingError(t, s.Validate(), "budget.max_tokens", "setup: budget.max_tokens: must be ≥ 0")
	s = stubSetup()
	s.Rollout.Workers = -2
	wantSettingError(t, s.Validate(), "rollout.workers", "setup: rollout.workers: must be ≥ 0")
	s = stubSetup()
	bad := llm.DefaultConfig()
	bad.MaxTokens = -1
	s.Agents = []AgentLLM{{}, {Config: bad}}
	wantSettingError(t, s.Validate(), "llm.max_tokens", "setup: agent 1: llm.max_tokens: must be at least 1, got -1")
}

// The zero AgentLLM.Config is llm.DefaultConfig(): its request defaults
// and its sim latency model.
func TestAgentLLMZeroConfig(t *testing.T) {
	if got := (AgentLLM{}).config(); got != llm.DefaultConfig() {
		t.Errorf("zero config = %+v", got)
	}
	c := llm.DefaultConfig()
	c.Model = "m"
	if got := (AgentLLM{Config: c}).config(); got.Model != "m" {
		t.Errorf("config = %+v", got)
	}
}

// A partial config, as a Go program with its own backend writes it, takes
// the defaults for what it leaves unset and is not held to the endpoint
// rules of llm.Config (backend, timeout, concurrency): they belong to
// whoever built the backend.
func TestAgentLLMPartialConfig(t *testing.T) {
	s := stubSetup()
	s.Agents = []AgentLLM{{Backend: panicLLM{}, Config: llm.Config{Model: "m"}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	got, d := s.Agents[0].config(), llm.DefaultConfig()
	if got.Model != "m" || got.MaxTokens != d.MaxTokens || got.Sim != d.Sim || got.Temperature != 0 {
		t.Errorf("config of a partial Config{Model: \"m\"} = %+v", got)
	}
}

// panicLLM is a custom backend that must not be called.
type panicLLM struct{}

func (panicLLM) Chat(context.Context, core.ChatRequest) (core.ChatResponse, error) {
	panic("not called")
}

// Evaluate checks the policy names before it plays, so an embedder gets
// the same check as the agentfile.
func TestEvaluateChecksPolicies(t *testing.T) {
	s := stubSetup()
	spec := s.Env.Spec()
	for _, c := range []struct {
		names   []string
		trained bool
		want    string
	}{
		{[]string{"grpo", "sop", "random"}, true, ""},
		{[]string{"sop", "random"}, false, ""},
		{[]string{"nosuch"}, true, `no policy "nosuch" for env stub (have grpo, sop, random)`},
		{[]string{"grpo"}, false, `policy "grpo" needs a trained policy, and none is given (have sop, random)`},
	} {
		err := Eval{Policies: c.names}.CheckPolicies(spec, c.trained)
		if c.want == "" {
			if err != nil {
				t.Errorf("%v: %v", c.names, err)
			}
			continue
		}
		wantSettingError(t, err, "policies", c.want)
	}
	_, err := Evaluate(context.Background(), s, nil, Eval{Episodes: 1, Policies: []string{"nosuch"}})
	wantSettingError(t, err, "eval.policies", `eval.policies: no policy "nosuch"`)
	_, err = Evaluate(context.Background(), s, nil, Eval{})
	wantSettingError(t, err, "eval.episodes", "eval.episodes: must be at least 1")
}

// The runtime's step limit is one rule for every env: the smaller of
// the env's own limit and rollout.max_steps, those that are set, else
// 1000. A rollout.max_steps larger than the env's limit does not lengthen
// its episodes, and a smaller one cuts them (the writing env sets none).
func TestStepLimit(t *testing.T) {
	for _, c := range []struct{ env, max, want int }{
		{0, 0, 1000}, {0, 7, 7}, {50, 0, 50}, {50, 7, 7}, {50, 2000, 50}, {5000, 0, 5000},
	} {
		if got := (Config{MaxSteps: c.max}).StepLimit(core.EnvSpec{MaxSteps: c.env}); got != c.want {
			t.Errorf("env limit %d, max_steps %d: limit %d, want %d", c.env, c.max, got, c.want)
		}
	}
	if DefaultConfig().MaxSteps != 0 {
		t.Errorf("default max_steps %d, want 0 (the env's own limit)", DefaultConfig().MaxSteps)
	}
	wantSettingError(t, Config{MaxSteps: -1}.Validate(), "max_steps", "(0 = the env's own limit, else 1000)")
}
