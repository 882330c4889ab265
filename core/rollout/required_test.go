package rollout

import (
	"testing"

	"github.com/troupe-dev/troupe/core"
)

// needing is a reward that declares the metrics it needs.
type needing struct {
	manyComponents
	metrics []string
}

func (n needing) RequiredMetrics() []string { return n.metrics }

// Setup.Validate, which every run applies (training, evaluation, an
// embedding program), refuses a reward whose metrics the env neither lists
// nor gets from the runtime, naming the reward's table.
func TestSetupRequiredMetrics(t *testing.T) {
	s := stubSetup()
	s.Rewards = append(s.Rewards, needing{manyComponents{"b": 1}, []string{core.MetricTokens, core.MetricLLMCalls}})
	if err := s.Validate(); err != nil {
		t.Fatalf("metrics the runtime sets: %v", err)
	}
	s.Rewards[1] = needing{manyComponents{"b": 1}, []string{core.MetricReturn}}
	wantSettingError(t, s.Validate(), "rewards.1", `reward many needs the episode metric "return", which env stub does not report`)
	spec := s.Env.Spec()
	spec.Metrics = []string{core.MetricReturn}
	s.Env = specOnly(spec)
	if err := s.Validate(); err != nil {
		t.Fatalf("a metric the env lists: %v", err)
	}
}

// Reward weights must be finite, at most MaxRewardWeight in magnitude and
// not all 0.
func TestCheckRewardWeights(t *testing.T) {
	rs := []core.RewardFunc{manyComponents{"a": 1, "b": 1}}
	for _, c := range []struct {
		weights   map[string]float64
		key, want string
	}{
		{map[string]float64{"a": 1e6, "b": -1e6}, "", ""},
		{map[string]float64{"a": 1e308}, "reward.weights.a", "at most 1e+06"},
		{map[string]float64{"a": 1, "b": -1.5e6}, "reward.weights.b", "at most 1e+06"},
		{map[string]float64{"a": 0, "b": 0}, "reward.weights", "every weight is 0"},
		{map[string]float64{"a": 0, "b": 1e-9}, "", ""},
	} {
		err := CheckRewards(rs, c.weights)
		if c.key == "" {
			if err != nil {
				t.Errorf("%v: %v", c.weights, err)
			}
			continue
		}
		wantSettingError(t, err, c.key, c.want)
	}
}
