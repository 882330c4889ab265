package trainer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
)

// baselineToy is the toy env with one scripted policy, "target": both
// agents pick the task's target. Its Act fails, as a plugin host's does
// when it loses the plugin, at step 1 of task seed failSeed, or on every
// call when failAll is set.
type baselineToy struct {
	*toyEnv
	failSeed uint64
	failAll  bool
}

func (e *baselineToy) Spec() core.EnvSpec {
	s := e.toyEnv.Spec()
	s.Baselines = []string{"target"}
	s.Capabilities |= core.CapBaseline
	return s
}

func (e *baselineToy) Baseline(name string) (core.Baseline, error) {
	if name != "target" {
		return nil, fmt.Errorf("toy: no baseline %q", name)
	}
	return targetBaseline{e}, nil
}

type targetBaseline struct{ e *baselineToy }

func (b targetBaseline) Act(obs []core.Observation) ([]int, error) {
	if b.e.failAll || (b.e.seed == b.e.failSeed && b.e.t == 1) {
		return nil, errors.New("toy: the baseline lost its plugin")
	}
	return []int{b.e.target, b.e.target}, nil
}

// envFunc opens the env f makes.
type envFunc func() core.Env

func (f envFunc) Spec() core.EnvSpec      { return f().Spec() }
func (f envFunc) Open() (core.Env, error) { return f(), nil }
func (envFunc) Close() error              { return nil }

// An error from a baseline fails the episode with the error as its reason;
// the episode is counted, not dropped, and the other episodes are unharmed.
func TestBaselineErrorFailsEpisode(t *testing.T) {
	ctx := context.Background()
	s := toySetup(2)
	bad := rollout.EvalTaskSeed(s.Eval.Seed, 2)
	s.Env = envFunc(func() core.Env { return &baselineToy{toyEnv: newToy(), failSeed: bad} })
	e := rollout.Eval{Episodes: 8, Seed: s.Eval.Seed, Policies: []string{"target"}}
	rep, err := rollout.Evaluate(ctx, s.Setup, nil, e)
	if err != nil {
		t.Fatal(err)
	}
	// The seven good episodes score 1 on each of their 6 steps.
	if r := rep.Policies["target"]; r.FailedEpisodes != 1 || r.Reward != 6 {
		t.Fatalf("target: %d failed episodes, mean reward %v; want 1 and 6", r.FailedEpisodes, r.Reward)
	}
	const want = "baseline target: toy: the baseline lost its plugin"
	res, err := rollout.RunEpisode(ctx, s.Setup, nil, "target", bad, nil)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("RunEpisode: err = %v, want it to contain %q", err, want)
	}
	if !res.Failed || res.Reason != want || res.Episode.Steps != 1 {
		t.Fatalf("RunEpisode: failed %v after %d steps, reason %q; want failed after 1 step with %q", res.Failed, res.Episode.Steps, res.Reason, want)
	}
	if res, err := rollout.RunEpisode(ctx, s.Setup, nil, "target", bad+1, nil); err != nil || res.Failed || res.Reward != 6 {
		t.Fatalf("RunEpisode of a good seed: %+v, %v", res, err)
	}
	// A baseline that always fails: the evaluation says so, with the reason.
	s.Env = envFunc(func() core.Env { return &baselineToy{toyEnv: newToy(), failAll: true} })
	if _, err := rollout.Evaluate(ctx, s.Setup, nil, e); err == nil || !strings.Contains(err.Error(), "every episode of policy target failed: 8× "+want) {
		t.Fatalf("Evaluate with a failing baseline: err = %v", err)
	}
}
