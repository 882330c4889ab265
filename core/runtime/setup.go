package runtime

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sort"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/llm"
)

// AgentLLM says how one agent gets its text.
type AgentLLM struct {
	// Backend is the agent's LLM. Nil means the offline simulated LLM: the
	// env's own surrogate (core.Simulator) with the latency model Sim.
	Backend core.LLM
	// Sim is the latency model of the simulated LLM (when Backend is nil).
	Sim llm.SimConfig
	// Model, MaxTokens and Temperature fill requests that leave them unset.
	Model       string
	MaxTokens   int
	Temperature float64
}

// BackendName returns "sim" for the simulated LLM, else the backend's name
// ("openai", or the Go type for a custom backend).
func (a AgentLLM) BackendName() string {
	if a.Backend == nil {
		return "sim"
	}
	if n, ok := a.Backend.(interface{ Name() string }); ok {
		return n.Name()
	}
	return fmt.Sprintf("%T", a.Backend)
}

// Budget caps the LLM tokens of one episode (0 = no cap). A capped episode
// ends early with what it has and is marked budget-stopped; it is never lost.
type Budget struct {
	MaxTokens         int
	MaxTokensPerAgent int
}

// Train configures GRPO training.
type Train struct {
	Iterations        int
	TasksPerIteration int
	GroupSize         int
	// Baseline is "mean", "rloo" or "max"; Scale "group", "batch" or
	// "none"; Credit "joint" (CTDE) or "independent".
	Baseline, Scale, Credit string
	Optimizer               grpo.Config
	Hidden                  []int
	SharePolicy             bool
	// Workers is the number of rollout workers (≥ 1).
	Workers int
	// CheckpointEvery writes checkpoint/ every N iterations.
	CheckpointEvery int
	// MaxFailureRatio stops the run when more than this fraction of one
	// iteration's episodes failed.
	MaxFailureRatio float64
	// MaxSteps truncates episodes of envs whose spec sets no MaxSteps.
	MaxSteps int
}

// DefaultTrain returns the defaults the agentfile documents.
func DefaultTrain() Train {
	return Train{
		Iterations: 100, TasksPerIteration: 16, GroupSize: 8,
		Baseline: "mean", Scale: "group", Credit: "joint",
		Optimizer: grpo.DefaultConfig(), Hidden: []int{64, 64}, SharePolicy: true,
		Workers: 2, CheckpointEvery: 10, MaxFailureRatio: 0.2, MaxSteps: 1000,
	}
}

// validate reports the first setting training cannot run with (the
// agentfile checks the same with file and line; this guards Go programs
// that build a Train themselves).
func (t Train) validate() error {
	switch {
	case t.TasksPerIteration < 1:
		return fmt.Errorf("setup: train.tasks_per_iteration must be at least 1, got %d", t.TasksPerIteration)
	case t.GroupSize < 1:
		return fmt.Errorf("setup: train.group_size must be at least 1, got %d", t.GroupSize)
	case t.CheckpointEvery < 1:
		return fmt.Errorf("setup: train.checkpoint_every must be at least 1, got %d", t.CheckpointEvery)
	case !(t.MaxFailureRatio >= 0 && t.MaxFailureRatio <= 1):
		return fmt.Errorf("setup: train.max_failure_ratio must be in [0, 1], got %v", t.MaxFailureRatio)
	}
	switch t.Baseline {
	case grpo.BaselineMean, grpo.BaselineRLOO, grpo.BaselineMax:
	default:
		return fmt.Errorf("setup: train.baseline must be mean, rloo or max, got %q", t.Baseline)
	}
	switch t.Scale {
	case grpo.ScaleGroup, grpo.ScaleBatch, grpo.ScaleNone:
	default:
		return fmt.Errorf("setup: train.scale must be group, batch or none, got %q", t.Scale)
	}
	switch t.Credit {
	case "joint", "independent":
	default:
		return fmt.Errorf("setup: train.credit must be joint or independent, got %q", t.Credit)
	}
	return nil
}

// Eval configures evaluation.
type Eval struct {
	Episodes int
	// Seed selects evaluation seeds, which never overlap training seeds.
	Seed uint64
	// Sampled evaluates the trained policy by sampling, not greedily.
	Sampled bool
	// Policies limits the evaluated policies; empty means "grpo" (when a
	// trained policy is given), every baseline of the env, and "random".
	Policies []string
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
	Train  Train
	Eval   Eval
	// Seed is the master seed.
	Seed uint64
	// Logger receives warnings (failed episodes, plugin output). Nil
	// means slog.Default().
	Logger *slog.Logger
}

func (s *Setup) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
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

// validate checks the setup against the env's spec.
func (s *Setup) validate(spec core.EnvSpec) error {
	if s.Env == nil {
		return errors.New("setup: no env")
	}
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
	if s.Train.Credit == "independent" && !spec.StepRewards {
		return fmt.Errorf("setup: credit = \"independent\" needs per-agent rewards, and env %q gives none", spec.Name)
	}
	for i := 0; i < spec.NumAgents(); i++ {
		a := s.agentLLM(i)
		if a.Backend != nil {
			continue
		}
		for _, d := range spec.Decisions {
			if d.NeedsText {
				if _, ok := s.probeSimulator(); !ok {
					return fmt.Errorf("setup: agent %d uses the sim LLM, but env %q is not a core.Simulator; configure an openai backend", i, spec.Name)
				}
				break
			}
		}
	}
	return nil
}

func (s *Setup) probeSimulator() (core.Simulator, bool) {
	e, err := s.Env.Open()
	if err != nil {
		return nil, false
	}
	defer e.Close()
	sim, ok := e.(core.Simulator)
	return sim, ok
}

func joinKeys[V any](m map[string]V) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	out := ""
	for i, k := range ks {
		if i > 0 {
			out += ", "
		}
		out += k
	}
	return out
}

// RewardsError is a problem with the reward functions or their weights.
// Key is the agentfile key it concerns, e.g. "reward.weights.speed".
type RewardsError struct {
	Key, Msg string
}

func (e *RewardsError) Error() string { return e.Key + ": " + e.Msg }

// CheckRewards checks that no component is returned by two reward
// functions and that every weight names a component one returns (a typo
// would otherwise weigh nothing). Its error is a *RewardsError.
func CheckRewards(rewards []core.RewardFunc, weights map[string]float64) error {
	comps := map[string]string{}
	for _, r := range rewards {
		for _, c := range r.Components() {
			if other, dup := comps[c]; dup {
				return &RewardsError{Key: "rewards", Msg: fmt.Sprintf("component %q is returned by both %s and %s", c, other, r.Name())}
			}
			comps[c] = r.Name()
		}
	}
	for _, c := range slices.Sorted(maps.Keys(weights)) {
		if _, ok := comps[c]; !ok {
			have := "none"
			if len(comps) > 0 {
				have = joinKeys(comps)
			}
			return &RewardsError{Key: "reward.weights." + c, Msg: fmt.Sprintf("no reward function returns a component %q (components of the rewards: %s)", c, have)}
		}
	}
	return nil
}
