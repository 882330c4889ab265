package rewards

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
)

func init() {
	core.RegisterReward("coding.pass_rate", func(p map[string]any) (core.RewardFunc, error) {
		return noParams(CodingPassRate{}, p)
	})
}

// CodingPassRate scores a coding episode by the fraction of the project's
// functions whose hidden tests pass. The coding env runs the hidden tests in
// its sandbox at the end of the episode and reports the fraction as the
// metric "pass_rate"; this reward reads it.
type CodingPassRate struct{}

// Name returns "coding.pass_rate".
func (CodingPassRate) Name() string { return "coding.pass_rate" }

// Components returns ["quality"].
func (CodingPassRate) Components() []string { return []string{"quality"} }

// RequiredMetrics returns ["pass_rate"].
func (CodingPassRate) RequiredMetrics() []string { return []string{core.MetricPassRate} }

// Score returns component "quality" and metric "pass_rate", both the
// episode's metric "pass_rate". It is an error if the metric is missing or
// outside [0, 1].
func (c CodingPassRate) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	v, err := metric(ep, core.MetricPassRate, c.Name())
	if err != nil {
		return nil, nil, err
	}
	if v < 0 || v > 1 {
		return nil, nil, fmt.Errorf("reward %s: metric %q is %v, want a fraction in [0, 1]", c.Name(), core.MetricPassRate, v)
	}
	return map[string]float64{"quality": v}, map[string]float64{core.MetricPassRate: v}, nil
}
