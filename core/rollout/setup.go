package rollout

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	goruntime "runtime"
	"slices"
	"sort"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/telemetry"
)

// AgentLLM says how one agent gets its text.
type AgentLLM struct {
	// Backend is the agent's LLM. Nil means the offline simulated LLM: the
	// env's own surrogate (core.Simulator) with the latency model
	// Config.Sim.
	Backend core.LLM
	// Config is the agent's [llm.NAME] table. The runtime uses four of its
	// fields: Model, MaxTokens and Temperature fill requests that leave
	// them unset, and Sim is the latency model of the simulated LLM. The
	// zero value means llm.DefaultConfig(); in a partial one (a Go program
	// setting only a model, say) an empty Model, a zero MaxTokens and a
	// zero Sim take the defaults. Backend and the endpoint fields are the
	// business of whoever built Backend (llm.New).
	Config llm.Config
}

// config returns the four settings the runtime uses, with unset ones
// resolved to llm.DefaultConfig()'s.
func (a AgentLLM) config() llm.Config {
	d := llm.DefaultConfig()
	if a.Config == (llm.Config{}) {
		return d
	}
	c := a.Config
	if c.Model != "" {
		d.Model = c.Model
	}
	if c.MaxTokens != 0 {
		d.MaxTokens = c.MaxTokens
	}
	if c.Sim != (llm.LatencyModel{}) {
		d.Sim = c.Sim
	}
	d.Temperature = c.Temperature
	return d
}

// backendName returns "sim" for the simulated LLM, else the backend's name
// ("openai", or the Go type for a custom backend).
func (a AgentLLM) backendName() string {
	if a.Backend == nil {
		return "sim"
	}
	if n, ok := a.Backend.(interface{ Name() string }); ok {
		return n.Name()
	}
	return fmt.Sprintf("%T", a.Backend)
}

// Budget caps the LLM tokens of one episode: the agentfile's [budget]
// table. A capped episode ends early with what it has and is marked
// budget-stopped; it is never lost. The caps are hard: under a budget a
// step's calls run one at a time in agent order, each with max_tokens cut
// to what is left after its estimated prompt, and a call that cannot fit
// is not made, so an episode exceeds a cap by at most what the one call
// that reached it used beyond its estimate.
type Budget struct {
	// MaxTokens caps the team's tokens per episode; 0 (the default) = none.
	MaxTokens int `toml:"max_tokens"`
	// MaxTokensPerAgent caps each agent's tokens per episode; 0 = none.
	MaxTokensPerAgent int `toml:"max_tokens_per_agent"`
}

// Validate reports the first setting that cannot work.
func (b Budget) Validate() error {
	switch {
	case b.MaxTokens < 0:
		return core.NewSettingError("max_tokens", "must be ≥ 0 (0 = none), got %d", b.MaxTokens)
	case b.MaxTokensPerAgent < 0:
		return core.NewSettingError("max_tokens_per_agent", "must be ≥ 0 (0 = none), got %d", b.MaxTokensPerAgent)
	}
	return nil
}

// Config says how episodes are played: the agentfile's [rollout] table.
type Config struct {
	// Workers is the number of rollout workers, each with its own env
	// instance; 0 (the default) means one per CPU (GOMAXPROCS).
	Workers int `toml:"workers"`
	// MaxSteps cuts every episode after this many steps, whatever the
	// env; the env's own limit (core.EnvSpec.MaxSteps), when smaller,
	// ends it first. 0 (the default) adds no limit to the env's own, and
	// means envStepLimit (1000) for an env that sets none. It is the one
	// runtime setting of an episode's length; an env's own params (lbf's
	// max_steps, say) set its spec's limit.
	MaxSteps int `toml:"max_steps"`
}

// envStepLimit is the step limit of an env whose spec sets none when
// [Config.MaxSteps] is 0.
const envStepLimit = 1000

// DefaultConfig returns the defaults documented on [Config]'s fields.
func DefaultConfig() Config { return Config{} }

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Workers < 0:
		return core.NewSettingError("workers", "must be ≥ 0 (0 = one per CPU), got %d", c.Workers)
	case c.MaxSteps < 0:
		return core.NewSettingError("max_steps", "must be ≥ 0 (0 = the env's own limit, else %d), got %d", envStepLimit, c.MaxSteps)
	}
	return nil
}

// StepLimit returns the number of steps after which the runtime cuts an
// episode of spec's env: the smaller of spec.MaxSteps and MaxSteps, those
// that are set, else envStepLimit (1000).
func (c Config) StepLimit(spec core.EnvSpec) int {
	switch {
	case spec.MaxSteps > 0 && c.MaxSteps > 0:
		return min(spec.MaxSteps, c.MaxSteps)
	case spec.MaxSteps > 0:
		return spec.MaxSteps
	case c.MaxSteps > 0:
		return c.MaxSteps
	}
	return envStepLimit
}

// NumWorkers returns Workers, with 0 resolved to one per CPU.
func (c Config) NumWorkers() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return max(1, goruntime.GOMAXPROCS(0))
}

// Eval configures an evaluation: the agentfile's [eval] table.
type Eval struct {
	// Episodes is the number of evaluation episodes per policy, ≥ 1.
	// Default 100.
	Episodes int `toml:"episodes"`
	// Seed selects the evaluation seeds, which never overlap training
	// seeds. Default 1.
	Seed uint64 `toml:"seed"`
	// Sampled evaluates the trained policy by sampling instead of
	// greedily. Default false.
	Sampled bool `toml:"sampled"`
	// Policies limits the evaluated policies; empty (the default) means
	// "grpo" (when a trained policy is given), every baseline of the env,
	// and "random".
	Policies []string `toml:"policies"`
	// Progress, if set, is called once before the first episode with
	// policy "" and done 0, then after each policy's episodes are played,
	// with that policy's name and how many of the total policies are
	// done: what a long evaluation shows while it runs. It is not a
	// setting of the agentfile.
	Progress func(policy string, done, total int) `toml:"-"`
}

// DefaultEval returns the defaults documented on [Eval]'s fields.
func DefaultEval() Eval { return Eval{Episodes: 100, Seed: 1} }

// Validate reports the first setting that cannot work.
func (e Eval) Validate() error {
	if e.Episodes < 1 {
		return core.NewSettingError("episodes", "must be at least 1, got %d", e.Episodes)
	}
	return nil
}

// CheckPolicies reports a name in e.Policies that is not a policy of an
// evaluation of spec's env: "grpo" (only when trained, that is when a
// trained policy is given), one of spec.Baselines, or "random". Its error
// is a *core.SettingError with the key "policies".
func (e Eval) CheckPolicies(spec core.EnvSpec, trained bool) error {
	var have []string
	if trained {
		have = append(have, "grpo")
	}
	have = append(append(have, spec.Baselines...), "random")
	for _, n := range e.Policies {
		switch {
		case slices.Contains(have, n):
		case n == "grpo":
			return core.NewSettingError("policies", "policy \"grpo\" needs a trained policy, and none is given (have %s)", strings.Join(have, ", "))
		default:
			return core.NewSettingError("policies", "no policy %q for env %s (have %s)", n, spec.Name, strings.Join(have, ", "))
		}
	}
	return nil
}

// Setup is everything a run needs. Treat it as immutable.
type Setup struct {
	// Name is the project's name (for reports).
	Name string
	// Env opens env instances, one per worker.
	Env core.EnvSource
	// Rewards score finished episodes; Weights weigh their components
	// into the joint reward R = Σ w_k c_k.
	Rewards []core.RewardFunc
	Weights map[string]float64
	// Agents holds one entry per agent, or a single entry used for all.
	Agents []AgentLLM
	Budget Budget
	// Rollout says how episodes are played (workers, step limit).
	Rollout Config
	// Seed is the master seed.
	Seed uint64
	// Logger receives the trainer's warnings (failed episodes of an
	// iteration). Nil means slog.Default().
	Logger *slog.Logger
	// Telemetry traces episodes and LLM calls and records their metrics
	// (the [telemetry] table). Nil, or an exporter of "none", is off.
	Telemetry *telemetry.Telemetry
}

// agentLLM returns agent i's LLM settings.
func (s *Setup) agentLLM(i int) AgentLLM {
	switch {
	case len(s.Agents) == 0:
		return AgentLLM{}
	case len(s.Agents) == 1:
		return s.Agents[0]
	default:
		return s.Agents[i]
	}
}

// Validate checks the setup against the env's spec (s.Env.Spec()).
func (s *Setup) Validate() error {
	if s.Env == nil {
		return errors.New("setup: no env")
	}
	spec := s.Env.Spec()
	if err := spec.Validate(); err != nil {
		return err
	}
	if len(s.Agents) > 1 && len(s.Agents) != spec.NumAgents() {
		return fmt.Errorf("setup: %d agent LLMs configured, but env %q has %d agents (set the team size in env.params, or give one LLM for all)", len(s.Agents), spec.Name, spec.NumAgents())
	}
	if len(s.Rewards) == 0 {
		return errors.New("setup: no reward functions")
	}
	if err := CheckRewards(s.Rewards, s.Weights); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := CheckRequiredMetrics(spec, s.Rewards); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	if err := s.Budget.Validate(); err != nil {
		return fmt.Errorf("setup: %w", err.(*core.SettingError).In("budget"))
	}
	if err := s.Rollout.Validate(); err != nil {
		return fmt.Errorf("setup: %w", err.(*core.SettingError).In("rollout"))
	}
	for i, a := range s.Agents {
		if err := a.config().Validate(); err != nil {
			return fmt.Errorf("setup: agent %d: %w", i, err.(*core.SettingError).In("llm"))
		}
	}
	if !needsText(spec) || spec.Capabilities.Has(core.CapSimulate) {
		return nil
	}
	for i := 0; i < spec.NumAgents(); i++ {
		if s.agentLLM(i).Backend == nil {
			return fmt.Errorf("setup: agent %d uses the sim LLM, but the spec of env %q does not declare core.CapSimulate (add it to EnvSpec.Capabilities if the env implements core.Simulator), or configure an openai backend", i, spec.Name)
		}
	}
	return nil
}

// needsText reports whether a decision of spec needs LLM text.
func needsText(spec core.EnvSpec) bool {
	for _, d := range spec.Decisions {
		if d.NeedsText {
			return true
		}
	}
	return false
}

// MaxRewardWeight bounds the magnitude of a reward weight. With the group
// or batch scale advantages are normalized, so weights only weigh the
// components against one another and a larger one says nothing a smaller
// one cannot; with scale = "none" a weight of 1e6 already multiplies the
// advantages a million-fold. Near the float64 limit the joint reward
// Σ w_k c_k and the squares the group statistics take of it overflow to
// ±Inf (a weight of 1e308 failed the first iteration).
const MaxRewardWeight = 1e6

// CheckRewards checks that no component is returned by two reward
// functions, that every weight names a component one returns (a typo
// would otherwise weigh nothing) with a finite weight of magnitude at most
// MaxRewardWeight, and that some weight is not 0 (else every rollout's
// joint reward is 0 and training learns nothing). Its error is a
// *core.SettingError whose Key is the agentfile key it concerns, e.g.
// "reward.weights.speed".
func CheckRewards(rewards []core.RewardFunc, weights map[string]float64) error {
	comps := map[string]string{}
	for _, r := range rewards {
		for _, c := range r.Components() {
			if other, dup := comps[c]; dup {
				return core.NewSettingError("rewards", "component %q is returned by both %s and %s", c, other, r.Name())
			}
			comps[c] = r.Name()
		}
	}
	for _, c := range slices.Sorted(maps.Keys(weights)) {
		if _, ok := comps[c]; !ok {
			have := "none"
			if len(comps) > 0 {
				have = strings.Join(slices.Sorted(maps.Keys(comps)), ", ")
			}
			return core.NewSettingError("reward.weights."+c, "no reward function returns a component %q (components of the rewards: %s)", c, have)
		}
		if w := weights[c]; math.IsNaN(w) || math.IsInf(w, 0) {
			return core.NewSettingError("reward.weights."+c, "weight %v is not a finite number", w)
		} else if math.Abs(w) > MaxRewardWeight {
			return core.NewSettingError("reward.weights."+c, "weight %v is out of range: its magnitude must be at most %g (weights are relative; larger ones overflow the joint reward's statistics)", w, MaxRewardWeight)
		}
	}
	allZero := len(weights) > 0
	for _, w := range weights {
		allZero = allZero && w == 0
	}
	if allZero {
		return core.NewSettingError("reward.weights", "every weight is 0: the joint reward would be 0 for every rollout and training would learn nothing")
	}
	return nil
}

// CheckRequiredMetrics checks that every metric a reward function
// requires (core.RequiredMetricsOf) is one spec's env lists or the runtime
// sets (core.CheckRequiredMetrics), so that a reward no episode can feed
// fails at load rather than in every episode. Its error is a
// *core.SettingError whose Key is the reward's agentfile table,
// "rewards.N".
func CheckRequiredMetrics(spec core.EnvSpec, rewards []core.RewardFunc) error {
	for i, r := range rewards {
		if err := core.CheckRequiredMetrics(spec, r); err != nil {
			return core.NewSettingError(fmt.Sprintf("rewards.%d", i), "%v", err)
		}
	}
	return nil
}

// Backend names the LLM backend(s) behind the team's text: "sim" for the
// simulated LLM, "replay" when no decision of spec needs text and the env
// replays recorded completions itself (it lists
// core.MetricReplayedCalls), "none" when no decision needs text
// otherwise, several joined by "+".
func (s *Setup) Backend(spec core.EnvSpec) string {
	if !needsText(spec) {
		if slices.Contains(spec.Metrics, core.MetricReplayedCalls) {
			return "replay"
		}
		return "none"
	}
	seen := map[string]bool{}
	var names []string
	for i := 0; i < spec.NumAgents(); i++ {
		n := s.agentLLM(i).backendName()
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}
