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
	// CreditCounterfactual gives each branched decision its own advantage
	// from counterfactual branches of the episode: the episode is replayed
	// up to the decision, the agent's decision is changed to each legal
	// alternative, the policy continues, and the joint rewards of the
	// branches form the decision's group (credit.go). The env must replay
	// (see core.Env) and every LLM must be the simulated one.
	CreditCounterfactual Credit = "counterfactual"
	// CreditValue gives each decision its own advantage from a learned
	// centralized critic V(state, agent) over the env's global state
	// (core.Env.State), by GAE(gamma, gae_lambda) over the episode's
	// steps, as MAPPO does (value.go). The env must declare a state
	// (EnvSpec.StateSize > 0).
	CreditValue Credit = "value"
)

// Aggregate says how a branched decision's value is taken from its
// branches against several decisions of the other agents.
type Aggregate string

// The aggregates of [Config.BranchAggregate].
const (
	// AggregateMean averages over the other agents' decisions: the value
	// of the decision against the team as it plays (COMA's expectation).
	AggregateMean Aggregate = "mean"
	// AggregateMax takes the best: the value of the decision if the others
	// coordinate with it (optimistic, as lenient and distributed
	// Q-learning are, against relative overgeneralization).
	AggregateMax Aggregate = "max"
)

// Config holds the training settings: the agentfile's [train] table. The
// optimizer's keys (learning_rate, clip, baseline, …) are those of the
// embedded [grpo.Config]; each field's comment gives its default
// ([DefaultConfig]) and [Config.Validate] its rule.
type Config struct {
	// Iterations is the number of GRPO iterations, ≥ 1. Default 100.
	Iterations int `toml:"iterations"`
	// TasksPerIteration is the number of task seeds per iteration, ≥ 1,
	// with TasksPerIteration × GroupSize at most MaxEpisodesPerIteration.
	// Default 16.
	TasksPerIteration int `toml:"tasks_per_iteration"`
	// GroupSize is G, the joint rollouts per task seed, in
	// [2, MaxGroupSize]; 1 only with credit = counterfactual, whose groups
	// are the branches (with joint or independent credit a group of one
	// is always flat: its advantage is 0 under every baseline, and
	// training would not change the policy), and never with the rloo
	// baseline. TasksPerIteration × GroupSize is at most
	// MaxEpisodesPerIteration. Default 8.
	GroupSize int `toml:"group_size"`
	// Credit says which reward each agent's decisions are credited with:
	// joint, independent, counterfactual or value. Default joint.
	Credit Credit `toml:"credit"`
	// BranchPoints is, with counterfactual credit, the number of recorded
	// decisions of each episode that are branched and credited (drawn
	// without replacement; all of them when the episode has fewer); the
	// others are left out of the update. ≥ 1, default 4.
	BranchPoints int `toml:"branch_points"`
	// BranchPartners is, with counterfactual credit, the number of joint
	// decisions of the other agents, drawn from the current policy at
	// their recorded observations, that each alternative is also tried
	// against at the branch step, besides the recorded one. ≥ 0, default 0
	// (the others' decisions held as recorded). A branch point costs
	// L·(1+BranchPartners) − 1 replayed episodes, L its legal decisions.
	BranchPartners int `toml:"branch_partners"`
	// BranchAggregate combines an alternative's branches against the
	// BranchPartners+1 decisions of the others: mean or max (max needs
	// BranchPartners ≥ 1). Default mean.
	BranchAggregate Aggregate `toml:"branch_aggregate"`
	// Gamma is γ, the discount of the GAE with credit = value, in [0, 1].
	// Default 0.99.
	Gamma float64 `toml:"gamma"`
	// GAELambda is λ of the GAE with credit = value, in [0, 1] (0: one-step
	// TD errors, 1: the discounted return minus the value). Default 0.95.
	GAELambda float64 `toml:"gae_lambda"`
	// ValueHidden lists the critic's hidden layer widths with credit =
	// value (see [policy.CheckHidden]). Default [64, 64].
	ValueHidden []int `toml:"value_hidden"`
	// ValueLearningRate is the critic's Adam step size with credit =
	// value, in (0, 1]. Default 1e-3.
	ValueLearningRate float64 `toml:"value_learning_rate"`
	// ValueEpochs is the number of passes of the critic's regression over
	// each iteration's states with credit = value, each cut into
	// `minibatches` Adam steps; ≥ 1. Default 4.
	ValueEpochs int `toml:"value_epochs"`
	// Imitate names a baseline of the env (core.EnvSpec.Baselines) whose
	// decisions the policy learns by behaviour cloning before the first
	// iteration: a warm start, after which GRPO improves on it with the
	// imitated policy as the KL term's reference (imitate.go). Empty (the
	// default): the policy starts from its random initialisation.
	Imitate string `toml:"imitate"`
	// ImitateEpisodes is the number of the baseline's episodes played, on
	// training task seeds, for the imitation. ≥ 1, default 256.
	ImitateEpisodes int `toml:"imitate_episodes"`
	// ImitateEpochs is the number of cross-entropy passes over their
	// decisions. ≥ 1, default 200: enough for the policy to take every
	// demonstrated decision of the shipped tasks' baselines (on ClassEval's
	// strong_by_team, 1 400 decisions, 30 passes took 97.3 % of them, and
	// the 2.7 % cost 0.020 joint reward on held-out classes; 200 take all).
	ImitateEpochs int `toml:"imitate_epochs"`
	// ImitateLearningRate is Adam's step size for the imitation, in
	// (0, 1]; the iterations after it use learning_rate. Default 3e-3.
	ImitateLearningRate float64 `toml:"imitate_learning_rate"`
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

// MaxGroupSize bounds [Config.GroupSize]. The group baseline's noise
// falls as 1/√G, so past a few hundred rollouts per task a larger group
// adds cost (every rollout is played and kept until the update) and no
// signal; 1024 is far past that point.
const MaxGroupSize = 1024

// MaxEpisodesPerIteration bounds TasksPerIteration × GroupSize, the
// episodes of one iteration. The trainer keeps all of them in memory until
// the update (each recorded decision's features and mask, each LLM call's
// prompt and completion, the episode's artifacts), and the iteration
// writes no progress until they are all played: a million episodes would
// exhaust memory or show nothing for hours.
const MaxEpisodesPerIteration = 1 << 16

// DefaultConfig returns the defaults documented on [Config]'s fields.
func DefaultConfig() Config {
	return Config{
		Iterations: 100, TasksPerIteration: 16, GroupSize: 8, Credit: CreditJoint,
		BranchPoints: 4, BranchAggregate: AggregateMean,
		Gamma: 0.99, GAELambda: 0.95, ValueHidden: []int{64, 64}, ValueLearningRate: 1e-3, ValueEpochs: 4,
		ImitateEpisodes: 256, ImitateEpochs: 200, ImitateLearningRate: 3e-3,
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
		{"imitate_episodes", c.ImitateEpisodes}, {"imitate_epochs", c.ImitateEpochs},
	} {
		if p.v < 1 {
			return core.NewSettingError(p.key, "must be at least 1, got %d", p.v)
		}
	}
	if math.IsNaN(c.MaxFailureRatio) || c.MaxFailureRatio < 0 || c.MaxFailureRatio > 1 {
		return core.NewSettingError("max_failure_ratio", "must be in [0, 1], got %v", c.MaxFailureRatio)
	}
	switch c.Credit {
	case CreditJoint, CreditIndependent, CreditCounterfactual, CreditValue:
	default:
		return core.NewSettingError("credit", "must be joint, independent, counterfactual or value, got %q", c.Credit)
	}
	switch {
	case c.GroupSize > MaxGroupSize:
		return core.NewSettingError("group_size", "must be at most %d, got %d (the group baseline's noise falls as 1/√G: a larger group costs rollouts and memory and adds no signal)", MaxGroupSize, c.GroupSize)
	case c.TasksPerIteration > MaxEpisodesPerIteration/c.GroupSize:
		return core.NewSettingError("tasks_per_iteration", "tasks_per_iteration × group_size = %d × %d = %d episodes per iteration, more than %d (the trainer keeps an iteration's episodes in memory until its update)", c.TasksPerIteration, c.GroupSize, c.TasksPerIteration*c.GroupSize, MaxEpisodesPerIteration)
	case c.GroupSize < 2 && c.Credit != CreditCounterfactual && c.Credit != CreditValue:
		return core.NewSettingError("group_size", "must be at least 2 with credit = %q, got %d: a group of one rollout is always flat (its advantage is 0 under every baseline, mean, rloo or max), so training would not change the policy (credit = \"counterfactual\" forms its groups from branches, and credit = \"value\" compares with its critic: both allow 1)", c.Credit, c.GroupSize)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !finite(c.Gamma) || c.Gamma < 0 || c.Gamma > 1:
		return core.NewSettingError("gamma", "must be in [0, 1], got %v", c.Gamma)
	case !finite(c.GAELambda) || c.GAELambda < 0 || c.GAELambda > 1:
		return core.NewSettingError("gae_lambda", "must be in [0, 1], got %v", c.GAELambda)
	case !finite(c.ValueLearningRate) || c.ValueLearningRate <= 0 || c.ValueLearningRate > 1:
		return core.NewSettingError("value_learning_rate", "must be in (0, 1], got %v", c.ValueLearningRate)
	case !finite(c.ImitateLearningRate) || c.ImitateLearningRate <= 0 || c.ImitateLearningRate > 1:
		return core.NewSettingError("imitate_learning_rate", "must be in (0, 1], got %v", c.ImitateLearningRate)
	case c.ValueEpochs < 1:
		return core.NewSettingError("value_epochs", "must be at least 1, got %d", c.ValueEpochs)
	}
	if err := policy.CheckHidden(c.ValueHidden); err != nil {
		return core.NewSettingError("value_hidden", "%s", err.(*core.SettingError).Msg)
	}
	switch {
	case c.BranchPoints < 1:
		return core.NewSettingError("branch_points", "must be at least 1, got %d", c.BranchPoints)
	case c.BranchPartners < 0:
		return core.NewSettingError("branch_partners", "must be ≥ 0, got %d", c.BranchPartners)
	case c.BranchAggregate != AggregateMean && c.BranchAggregate != AggregateMax:
		return core.NewSettingError("branch_aggregate", "must be mean or max, got %q", c.BranchAggregate)
	case c.BranchAggregate == AggregateMax && c.BranchPartners < 1:
		return core.NewSettingError("branch_aggregate", "max needs branch_partners ≥ 1 (over the recorded decisions of the others alone it is the mean)")
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
