package trainer

import (
	"math"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/policy"
)

// Credit says which reward each agent's decisions are credited with.
type Credit string

// The credit assignments of [Config.Credit].
const (
	// CreditJoint gives every decision of a rollout the advantage of the
	// rollout's joint reward (centralized training, the default).
	CreditJoint Credit = "joint"
	// CreditIndependent gives each agent the advantage of its own return
	// (an ablation; the env must report per-agent step rewards).
	CreditIndependent Credit = "independent"
)

// Config holds the training settings: the agentfile's [train] table. The
// optimizer's keys (learning_rate, clip, baseline, …) are those of the
// embedded [grpo.Config]; each field's comment gives its default
// ([DefaultConfig]) and [Config.Validate] its rule.
type Config struct {
	// Iterations is the number of GRPO iterations, ≥ 1. Default 100.
	Iterations int `toml:"iterations"`
	// TasksPerIteration is the number of task seeds per iteration, ≥ 1.
	// Default 16.
	TasksPerIteration int `toml:"tasks_per_iteration"`
	// GroupSize is G, the joint rollouts per task seed, ≥ 1 (≥ 2 with the
	// rloo baseline). Default 8.
	GroupSize int `toml:"group_size"`
	// Credit says which reward each agent's decisions are credited with.
	// Default joint.
	Credit Credit `toml:"credit"`
	// Hidden lists the policy's hidden layer widths (see
	// [policy.CheckHidden]). Default [64, 64].
	Hidden []int `toml:"hidden"`
	// SharePolicy trains one network for all agents (an agent one-hot is
	// appended to its observation) instead of one per agent. Default true.
	SharePolicy bool `toml:"share_policy"`
	// CheckpointEvery writes checkpoint/ every N iterations, ≥ 1.
	// Default 10.
	CheckpointEvery int `toml:"checkpoint_every"`
	// MaxFailureRatio stops the run when more than this fraction of one
	// iteration's episodes failed; in [0, 1]. Default 0.2.
	MaxFailureRatio float64 `toml:"max_failure_ratio"`

	// Config holds the optimizer's settings.
	grpo.Config
}

// DefaultConfig returns the defaults documented on [Config]'s fields.
func DefaultConfig() Config {
	return Config{
		Iterations: 100, TasksPerIteration: 16, GroupSize: 8, Credit: CreditJoint,
		Hidden: []int{64, 64}, SharePolicy: true, CheckpointEvery: 10, MaxFailureRatio: 0.2,
		Config: grpo.DefaultConfig(),
	}
}

// Validate reports the first setting that cannot work, as a
// *core.SettingError naming its key.
func (c Config) Validate() error {
	for _, p := range []struct {
		key string
		v   int
	}{
		{"iterations", c.Iterations}, {"tasks_per_iteration", c.TasksPerIteration},
		{"group_size", c.GroupSize}, {"checkpoint_every", c.CheckpointEvery},
	} {
		if p.v < 1 {
			return core.NewSettingError(p.key, "must be at least 1, got %d", p.v)
		}
	}
	if math.IsNaN(c.MaxFailureRatio) || c.MaxFailureRatio < 0 || c.MaxFailureRatio > 1 {
		return core.NewSettingError("max_failure_ratio", "must be in [0, 1], got %v", c.MaxFailureRatio)
	}
	switch c.Credit {
	case CreditJoint, CreditIndependent:
	default:
		return core.NewSettingError("credit", "must be joint or independent, got %q", c.Credit)
	}
	if err := policy.CheckHidden(c.Hidden); err != nil {
		return err
	}
	if err := c.Config.Validate(); err != nil {
		return err
	}
	if c.Baseline == grpo.BaselineRLOO && c.GroupSize < 2 {
		return core.NewSettingError("group_size", "the rloo baseline needs at least 2 rollouts per group, got %d", c.GroupSize)
	}
	return nil
}
