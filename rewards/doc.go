// Package rewards holds troupe's built-in reward functions. Importing it
// registers each as "builtin:NAME" for the agentfile's [[rewards]] tables:
//
//   - "makespan": component "speed" = clamp(1 − makespan_s/reference_makespan_s, −1, 1),
//     the fraction of a single agent's time the team saved: 0 at the
//     single-agent pace, 0.5 at 2×, 0.667 at 3×. Larger is faster, and the
//     scale is the same for every task.
//   - "tokens": component "cost" = −clamp(tokens/reference_tokens, 0, 5):
//     0 is free, −1 spends what the single-agent way spends.
//   - "return": component "return" = the env's team return (metric "return").
//   - "writing.consistency": component "quality" (see rewards/consistency).
//   - "coding.pass_rate": component "quality" = fraction of functions whose
//     hidden tests pass.
//   - "classeval.dollars": component "cost" = −clamp(dollars/reference_dollars,
//     0, 5), the classeval env's cost in money against its reference.
//
// Each reads well-known episode metrics (core.MetricMakespan and the others
// declared in package core), which the envs report.
package rewards

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/core"
)

func init() {
	core.RegisterReward("makespan", func(p map[string]any) (core.RewardFunc, error) {
		return noParams(Makespan{}, p)
	})
	core.RegisterReward("tokens", func(p map[string]any) (core.RewardFunc, error) {
		return noParams(Tokens{}, p)
	})
	core.RegisterReward("return", func(p map[string]any) (core.RewardFunc, error) {
		return noParams(Return{}, p)
	})
}

// noParams returns r, or an error naming the keys when p holds any.
func noParams(r core.RewardFunc, p map[string]any) (core.RewardFunc, error) {
	if len(p) > 0 {
		keys := slices.Sorted(maps.Keys(p))
		return nil, fmt.Errorf("reward %s: params: unknown key(s) %s: it takes no params", r.Name(), strings.Join(keys, ", "))
	}
	return r, nil
}

func metric(ep *core.Episode, name, reward string) (float64, error) {
	v, ok := ep.Metrics[name]
	if !ok {
		return 0, fmt.Errorf("reward %s: the episode has no metric %q (the env must report it on its last step)", reward, name)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("reward %s: metric %q is %v", reward, name, v)
	}
	return v, nil
}

// Makespan scores speed against the single-agent reference.
type Makespan struct{}

// Name returns "makespan".
func (Makespan) Name() string { return "makespan" }

// Components returns ["speed"].
func (Makespan) Components() []string { return []string{"speed"} }

// RequiredMetrics returns ["makespan_s", "reference_makespan_s"].
func (Makespan) RequiredMetrics() []string {
	return []string{core.MetricMakespan, core.MetricReferenceMakespan}
}

// Score returns speed = clamp(1 − makespan_s/reference_makespan_s, −1, 1).
// A reference of 0 means the env does not normalise time; speed is then 0.
func (m Makespan) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	ms, err := metric(ep, core.MetricMakespan, m.Name())
	if err != nil {
		return nil, nil, err
	}
	ref, err := metric(ep, core.MetricReferenceMakespan, m.Name())
	if err != nil {
		return nil, nil, err
	}
	speed := 0.0
	if ref > 0 {
		speed = math.Max(-1, math.Min(1, 1-ms/ref))
	}
	return map[string]float64{"speed": speed}, nil, nil
}

// Tokens scores cost against the single-agent reference.
type Tokens struct{}

// Name returns "tokens".
func (Tokens) Name() string { return "tokens" }

// Components returns ["cost"].
func (Tokens) Components() []string { return []string{"cost"} }

// RequiredMetrics returns ["tokens", "reference_tokens"] ("tokens" is set
// by the runtime when the env does not report it).
func (Tokens) RequiredMetrics() []string {
	return []string{core.MetricTokens, core.MetricReferenceTokens}
}

// Score returns cost = −clamp(tokens/reference_tokens, 0, 5); 0 when the
// reference is 0.
func (t Tokens) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	n, err := metric(ep, core.MetricTokens, t.Name())
	if err != nil {
		return nil, nil, err
	}
	ref, err := metric(ep, core.MetricReferenceTokens, t.Name())
	if err != nil {
		return nil, nil, err
	}
	cost := 0.0
	if ref > 0 {
		cost = -math.Max(0, math.Min(5, n/ref))
	}
	return map[string]float64{"cost": cost}, nil, nil
}

// Return passes the env's team return through.
type Return struct{}

// Name returns "return".
func (Return) Name() string { return "return" }

// Components returns ["return"].
func (Return) Components() []string { return []string{"return"} }

// RequiredMetrics returns ["return"].
func (Return) RequiredMetrics() []string { return []string{core.MetricReturn} }

// Score returns the episode metric "return".
func (r Return) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	v, err := metric(ep, core.MetricReturn, r.Name())
	if err != nil {
		return nil, nil, err
	}
	return map[string]float64{"return": v}, nil, nil
}
