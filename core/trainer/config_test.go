package trainer

import (
	"errors"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/grpo"
)

// TestGroupSizeThatCannotWork: a group of one rollout is flat under every
// baseline (so training is a no-op) unless counterfactual credit makes
// groups of branches, and groups or iterations too large to hold are
// refused, each with the key group_size or tasks_per_iteration.
func TestGroupSizeThatCannotWork(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Config)
		key  string // "" = valid
		want string
	}{
		{"one rollout, mean", func(c *Config) { c.GroupSize = 1 }, "group_size", "always flat"},
		{"one rollout, max", func(c *Config) { c.GroupSize, c.Baseline = 1, grpo.BaselineMax }, "group_size", "always flat"},
		{"one rollout, rloo", func(c *Config) { c.GroupSize, c.Baseline = 1, grpo.BaselineRLOO }, "group_size", "always flat"},
		{"one rollout, independent", func(c *Config) { c.GroupSize, c.Credit = 1, CreditIndependent }, "group_size", "always flat"},
		{"one rollout, counterfactual", func(c *Config) { c.GroupSize, c.Credit = 1, CreditCounterfactual }, "", ""},
		{"one rollout, counterfactual, rloo", func(c *Config) {
			c.GroupSize, c.Credit, c.Baseline = 1, CreditCounterfactual, grpo.BaselineRLOO
		}, "group_size", "rloo baseline needs at least 2"},
		{"two rollouts", func(c *Config) { c.GroupSize = 2 }, "", ""},
		{"largest group", func(c *Config) { c.GroupSize, c.TasksPerIteration = MaxGroupSize, 1 }, "", ""},
		{"group too large", func(c *Config) { c.GroupSize = 100000 }, "group_size", "must be at most 1024, got 100000"},
		{"iteration too large", func(c *Config) { c.GroupSize, c.TasksPerIteration = 1024, 65 }, "tasks_per_iteration", "65 × 1024 = 66560 episodes per iteration, more than 65536"},
		{"iteration at the bound", func(c *Config) { c.GroupSize, c.TasksPerIteration = 1024, 64 }, "", ""},
		{"huge tasks, no overflow", func(c *Config) { c.GroupSize, c.TasksPerIteration = 8, 1<<62 }, "tasks_per_iteration", "episodes per iteration"},
	} {
		cfg := DefaultConfig()
		c.edit(&cfg)
		err := cfg.Validate()
		if c.key == "" {
			if err != nil {
				t.Errorf("%s: %v, want valid", c.name, err)
			}
			continue
		}
		se, ok := errors.AsType[*core.SettingError](err)
		if !ok || se.Key != c.key || !strings.Contains(se.Msg, c.want) {
			t.Errorf("%s: err = %v, want a *core.SettingError on %s containing %q", c.name, err, c.key, c.want)
		}
	}
}
