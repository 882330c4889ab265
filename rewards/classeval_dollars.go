package rewards

import (
	"math"

	"github.com/troupe-dev/troupe/core"
)

func init() {
	core.RegisterReward("classeval.dollars", func(p map[string]any) (core.RewardFunc, error) {
		return noParams(ClassEvalDollars{}, p)
	})
}

// The metrics ClassEvalDollars reads, as the classeval env reports them:
// what the episode's LLM calls cost at its model table's prices, and what
// its reference way of working costs.
const (
	metricDollars          = "dollars"
	metricReferenceDollars = "reference_dollars"
)

// ClassEvalDollars scores cost in money against the reference: in a team
// whose models have different prices, tokens do not say what a run costs.
type ClassEvalDollars struct{}

// Name returns "classeval.dollars".
func (ClassEvalDollars) Name() string { return "classeval.dollars" }

// Components returns ["cost"].
func (ClassEvalDollars) Components() []string { return []string{"cost"} }

// RequiredMetrics returns ["dollars", "reference_dollars"].
func (ClassEvalDollars) RequiredMetrics() []string {
	return []string{metricDollars, metricReferenceDollars}
}

// Score returns cost = −clamp(dollars/reference_dollars, 0, 5); 0 when the
// reference is 0. It is an error if either metric is missing.
func (d ClassEvalDollars) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	usd, err := metric(ep, metricDollars, d.Name())
	if err != nil {
		return nil, nil, err
	}
	ref, err := metric(ep, metricReferenceDollars, d.Name())
	if err != nil {
		return nil, nil, err
	}
	cost := 0.0
	if ref > 0 {
		cost = -math.Max(0, math.Min(5, usd/ref))
	}
	return map[string]float64{"cost": cost}, nil, nil
}
