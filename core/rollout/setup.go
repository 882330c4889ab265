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
// budget-stopped; it is never lost.
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
	// MaxSteps truncates episodes of envs whose spec sets no MaxSteps.
	// Default 1000; 0 means the default.
	MaxSteps int `toml:"max_steps"`
}

// defaultMaxSteps is the default of [Config.MaxSteps].
const defaultMaxSteps = 1000

// DefaultConfig returns the defaults documented on [Config]'s fields.
func DefaultConfig() Config { return Config{MaxSteps: defaultMaxSteps} }

// Validate reports the first setting that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Workers < 0:
		return core.NewSettingError("workers", "must be ≥ 0 (0 = one per CPU), got %d", c.Workers)
	case c.MaxSteps < 0:
		return core.NewSettingError("max_steps", "must be ≥ 0 (0 = %d), got %d", defaultMaxSteps, c.MaxSteps)
	}
	return nil
}

// stepLimit returns MaxSteps, with 0 resolved to the default.
func (c Config) stepLimit() int {
	if c.MaxSteps > 0 {
		return c.MaxSteps
	}
	return defaultMaxSteps
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

// CheckRewards checks that no component is returned by two reward
// functions and that every weight names a component one returns (a typo
// would otherwise weigh nothing) with a finite weight. Its error is a
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
		}
	}
	return nil
}

// Backend names the LLM backend(s) behind the team's text: "sim" for the
// simulated LLM, "none" when no decision of spec needs text, several
// joined by "+".
func (s *Setup) Backend(spec core.EnvSpec) string {
	if !needsText(spec) {
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
