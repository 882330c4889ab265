package grpo

import (
	"math"

	"github.com/troupe-dev/troupe/core"
)

// Baseline is what a rollout's reward is compared with inside its group.
type Baseline string

// The baselines of [GroupAdvantages].
const (
	BaselineMean Baseline = "mean" // the group's mean reward
	BaselineRLOO Baseline = "rloo" // leave-one-out: the mean of the other members
	BaselineMax  Baseline = "max"  // the group's best reward
)

// Scale is what advantages are divided by.
type Scale string

// The scales of [GroupAdvantages].
const (
	ScaleGroup Scale = "group" // the group's standard deviation
	ScaleBatch Scale = "batch" // the standard deviation of the whole batch
	ScaleNone  Scale = "none"  // 1
)

// Config holds the optimizer's settings: the GRPO keys of the agentfile's
// [train] table. Each field's comment gives its default ([DefaultConfig])
// and [Config.Validate] its rule.
type Config struct {
	// LearningRate is Adam's step size, in (0, 1]. Default 3e-3.
	LearningRate float64 `toml:"learning_rate" json:"learning_rate"`
	// Clip is ε, the lower clip range of the ratio: ρ ≥ 1−ε; in (0, 1).
	// Default 0.2.
	Clip float64 `toml:"clip" json:"clip"`
	// ClipHigh is ε_high, the upper clip range: ρ ≤ 1+ε_high; 0 (the
	// default) means Clip.
	ClipHigh float64 `toml:"clip_high" json:"clip_high"`
	// KL is β, the weight of the k3 KL penalty towards the reference
	// policy; ≥ 0, default 0.
	KL float64 `toml:"kl" json:"kl"`
	// Entropy is η, the weight of the entropy bonus; ≥ 0, default 0.
	Entropy float64 `toml:"entropy" json:"entropy"`
	// MaxGradNorm clips the global gradient norm before each step; 0
	// disables clipping. Default 1.
	MaxGradNorm float64 `toml:"max_grad_norm" json:"max_grad_norm"`
	// Epochs is the number of passes over each batch (μ), ≥ 1. Default 4.
	Epochs int `toml:"epochs" json:"epochs"`
	// Minibatches is the number of Adam steps per pass, ≥ 1. Default 4.
	Minibatches int `toml:"minibatches" json:"minibatches"`
	// Baseline is subtracted from each reward of a group. Default mean.
	Baseline Baseline `toml:"baseline" json:"baseline"`
	// Scale divides the difference. Default group.
	Scale Scale `toml:"scale" json:"scale"`
}

// DefaultConfig returns the defaults documented on [Config]'s fields.
func DefaultConfig() Config {
	return Config{
		LearningRate: 3e-3, Clip: 0.2, MaxGradNorm: 1, Epochs: 4, Minibatches: 4,
		Baseline: BaselineMean, Scale: ScaleGroup,
	}
}

// Validate reports the first setting that cannot work, as a
// *core.SettingError naming its key.
func (c Config) Validate() error {
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case !finite(c.LearningRate) || c.LearningRate <= 0 || c.LearningRate > 1:
		return core.NewSettingError("learning_rate", "must be in (0, 1], got %v", c.LearningRate)
	case !finite(c.Clip) || c.Clip <= 0 || c.Clip >= 1:
		return core.NewSettingError("clip", "must be in (0, 1), got %v", c.Clip)
	case !finite(c.ClipHigh) || c.ClipHigh < 0:
		return core.NewSettingError("clip_high", "must be ≥ 0 (0 = same as clip), got %v", c.ClipHigh)
	case !finite(c.KL) || c.KL < 0:
		return core.NewSettingError("kl", "must be ≥ 0, got %v", c.KL)
	case !finite(c.Entropy) || c.Entropy < 0:
		return core.NewSettingError("entropy", "must be ≥ 0, got %v", c.Entropy)
	case !finite(c.MaxGradNorm) || c.MaxGradNorm < 0:
		return core.NewSettingError("max_grad_norm", "must be ≥ 0 (0 = no clipping), got %v", c.MaxGradNorm)
	case c.Epochs < 1:
		return core.NewSettingError("epochs", "must be at least 1, got %d", c.Epochs)
	case c.Minibatches < 1:
		return core.NewSettingError("minibatches", "must be at least 1, got %d", c.Minibatches)
	}
	switch c.Baseline {
	case BaselineMean, BaselineRLOO, BaselineMax:
	default:
		return core.NewSettingError("baseline", "must be mean, rloo or max, got %q", c.Baseline)
	}
	switch c.Scale {
	case ScaleGroup, ScaleBatch, ScaleNone:
	default:
		return core.NewSettingError("scale", "must be group, batch or none, got %q", c.Scale)
	}
	return nil
}

func (c Config) clipHigh() float64 {
	if c.ClipHigh == 0 {
		return c.Clip
	}
	return c.ClipHigh
}
