package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/internal/testenv"
)

func train(t *testing.T, s toyProject, out string, resume bool, ctx context.Context) error {
	t.Helper()
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	return tr.Run(ctx, RunOptions{Out: out, Resume: resume})
}

// sameOnWorkers trains setup(1) and setup(3) and fails the test unless
// both write the same 6 lines of metrics.jsonl (timing aside) and the
// same policy; it returns those metrics lines.
func sameOnWorkers(t *testing.T, setup func(workers int) toyProject) []string {
	t.Helper()
	d1, d3 := t.TempDir(), t.TempDir()
	if err := train(t, setup(1), d1, false, context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := train(t, setup(3), d3, false, context.Background()); err != nil {
		t.Fatal(err)
	}
	a, b := testenv.MetricsWithoutTiming(t, filepath.Join(d1, "metrics.jsonl")), testenv.MetricsWithoutTiming(t, filepath.Join(d3, "metrics.jsonl"))
	if len(a) != 6 || strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("metrics differ between 1 and 3 workers:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	p1, _ := os.ReadFile(filepath.Join(d1, "policy.safetensors"))
	p3, _ := os.ReadFile(filepath.Join(d3, "policy.safetensors"))
	if len(p1) == 0 || !bytes.Equal(p1, p3) {
		t.Fatal("policies differ between 1 and 3 workers")
	}
	return a
}

func TestDeterministicAcrossWorkers(t *testing.T) {
	a := sameOnWorkers(t, toySetup)
	var first map[string]any
	_ = json.Unmarshal([]byte(a[0]), &first)
	for _, k := range []string{"iteration", "reward_mean", "reward_std", "components", "kl", "clip_frac", "entropy", "frac_zero_std_groups", "env_steps"} {
		if _, ok := first[k]; !ok {
			t.Errorf("metrics.jsonl lacks %q", k)
		}
	}
}

// resumeEquals trains setup(2) through, and again interrupted after
// iteration 3, calls interrupted on the interrupted run's directory,
// resumes that run with setup(1), and fails the test unless it ends with
// the same metrics.jsonl (timing aside) and policy as the uninterrupted
// one.
func resumeEquals(t *testing.T, setup func(workers int) toyProject, interrupted func(part string)) {
	t.Helper()
	full := t.TempDir()
	if err := train(t, setup(2), full, false, context.Background()); err != nil {
		t.Fatal(err)
	}
	part := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	s := setup(2)
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	// Interrupt during iteration 4: iterations 1-3 are done, 3 is not a
	// checkpoint multiple, so the interruption itself must save it.
	err = tr.Run(ctx, RunOptions{Out: part, Progress: func(st IterationStats) {
		if st.Iteration == 3 {
			cancel()
		}
	}})
	tr.Close()
	if err != ErrInterrupted {
		t.Fatalf("want ErrInterrupted, got %v", err)
	}
	interrupted(part)
	if err := train(t, setup(1), part, true, context.Background()); err != nil {
		t.Fatal(err)
	}
	a, b := testenv.MetricsWithoutTiming(t, filepath.Join(full, "metrics.jsonl")), testenv.MetricsWithoutTiming(t, filepath.Join(part, "metrics.jsonl"))
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("resumed metrics differ:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	p1, _ := os.ReadFile(filepath.Join(full, "policy.safetensors"))
	p2, _ := os.ReadFile(filepath.Join(part, "policy.safetensors"))
	if !bytes.Equal(p1, p2) {
		t.Fatal("interrupted-and-resumed policy differs from the uninterrupted one")
	}
}

func TestResumeEqualsUninterrupted(t *testing.T) {
	resumeEquals(t, toySetup, func(part string) {
		if _, err := os.Stat(filepath.Join(part, "policy.safetensors")); err == nil {
			t.Fatal("an interrupted run must not write the final policy")
		}
	})
}

// learns steps a trainer for s through s.Train.Iterations iterations and
// firstIteration makes a trainer of s and cfg, runs its first iteration
// and closes it (when the test ends), failing the test on any error.
func firstIteration(t *testing.T, s rollout.Setup, cfg Config) (IterationStats, []rollout.EpisodeResult) {
	t.Helper()
	tr, err := New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	st, results, err := tr.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st, results
}

// fails the test unless the mean reward rose by 1 or more from the first
// iteration to the last. It returns the trainer (closed when the test
// ends) and the last iteration's stats.
func learns(t *testing.T, s toyProject) (*Trainer, IterationStats) {
	t.Helper()
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tr.Close)
	var first, last IterationStats
	for i := 0; i < s.Train.Iterations; i++ {
		st, _, err := tr.Step(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = st
		}
		last = st
	}
	if last.RewardMean < first.RewardMean+1 {
		t.Fatalf("no learning: reward %.3f -> %.3f", first.RewardMean, last.RewardMean)
	}
	return tr, last
}

func TestTrainingLearns(t *testing.T) {
	s := toySetup(2)
	s.Train.Iterations = 25
	tr, _ := learns(t, s)
	rep, err := rollout.Evaluate(context.Background(), s.Setup, tr.Policy(), s.Eval)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Policies["grpo"].Reward <= rep.Policies["random"].Reward {
		t.Fatalf("trained policy no better than random: %+v", rep.Policies)
	}
	if rep.Backend != "sim" {
		t.Fatalf("backend label %q, want sim", rep.Backend)
	}
}

func TestFailedEpisodesCounted(t *testing.T) {
	s := toySetup(2)
	bad := rollout.TrainTaskSeed(s.Seed, 0, 1)
	var closed atomic.Int64
	s.Env = toySource{mk: func() *toyEnv { e := newToy(); e.failSeed = bad; e.closed = &closed; return e }}
	s.Train.MaxFailureRatio = 0.5
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	st, results, err := tr.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.FailedEpisodes != s.Train.GroupSize || st.Episodes != 16 {
		t.Fatalf("want %d failed of 16, got %d of %d", s.Train.GroupSize, st.FailedEpisodes, st.Episodes)
	}
	for _, r := range results {
		if r.Failed && !strings.Contains(r.Reason, "injected failure") {
			t.Fatalf("failure reason lost: %q", r.Reason)
		}
	}
	if n := closed.Load(); n < int64(s.Train.GroupSize) {
		t.Fatalf("a failed env instance must be closed and replaced; closed %d", n)
	}
	// Past the failure ratio the run stops with a clear error.
	s.Train.MaxFailureRatio = 0.1
	tr2, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	defer tr2.Close()
	if _, _, err := tr2.Step(context.Background()); err == nil || !strings.Contains(err.Error(), "max_failure_ratio") {
		t.Fatalf("want a failure-ratio error, got %v", err)
	}
}

func TestBudgetStopsEpisode(t *testing.T) {
	s := toySetup(1)
	s.Budget = rollout.Budget{MaxTokens: 15}
	res, err := rollout.RunEpisode(context.Background(), s.Setup, nil, "random", 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Random agents "say" with probability 1/3 each step; the budget is
	// hard, and a call's prompt alone (estimated ~35 tokens) does not fit
	// in 15, so the first "say" stops the episode before its call.
	if res.Episode.BudgetStopped {
		if res.Metrics[core.MetricBudgetStopped] != 1 || !res.Episode.Truncated || res.Metrics[core.MetricLLMTokens] > 15 {
			t.Fatalf("budget stop not recorded: %+v", res.Metrics)
		}
	}
	stopped := 0
	for seed := uint64(1); seed < 30; seed++ {
		r, err := rollout.RunEpisode(context.Background(), s.Setup, nil, "random", seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		if r.Episode.BudgetStopped {
			stopped++
			if r.Episode.Steps >= 6 && r.Episode.Terminated {
				t.Fatal("a budget-stopped episode must end early")
			}
		}
	}
	if stopped == 0 {
		t.Fatal("no episode was budget-stopped")
	}
}

func TestSetupValidation(t *testing.T) {
	s := toySetup(1)
	s.Weights = map[string]float64{"speed": 1}
	if _, err := New(s.Setup, s.Train); err == nil || !strings.Contains(err.Error(), "speed") {
		t.Fatalf("a weight on a missing component must be an error: %v", err)
	}
	s = toySetup(1)
	s.Agents = []rollout.AgentLLM{{}, {}, {}}
	if _, err := New(s.Setup, s.Train); err == nil || !strings.Contains(err.Error(), "3 agent LLMs") {
		t.Fatalf("agent count mismatch must be an error: %v", err)
	}
	// A Train built by hand (not by the agentfile) is checked too: a zero
	// CheckpointEvery used to divide by zero in Run, empty groups to write
	// NaN statistics, and an empty Credit to train with independent credit.
	for _, c := range []struct {
		edit func(*Config)
		want string
	}{
		{func(t *Config) { t.CheckpointEvery = 0 }, "train.checkpoint_every: must be at least 1, got 0"},
		{func(t *Config) { t.GroupSize = 0 }, "train.group_size: must be at least 1, got 0"},
		{func(t *Config) { t.TasksPerIteration = -1 }, "train.tasks_per_iteration: must be at least 1, got -1"},
		{func(t *Config) { t.Credit = "" }, `train.credit: must be joint, independent, counterfactual or value, got ""`},
		{func(t *Config) { t.Baseline = "median" }, `train.baseline: must be mean, rloo or max, got "median"`},
		{func(t *Config) { t.Scale = "std" }, `train.scale: must be group, batch or none, got "std"`},
		{func(t *Config) { t.MaxFailureRatio = math.NaN() }, "train.max_failure_ratio: must be in [0, 1], got NaN"},
	} {
		s := toySetup(1)
		c.edit(&s.Train)
		tr, err := New(s.Setup, s.Train)
		if err == nil {
			tr.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New: err = %v, want it to contain %q", err, c.want)
		}
		// The error is the component's *core.SettingError, its key
		// nested in the table.
		key, _, _ := strings.Cut(c.want, ":")
		if se, ok := errors.AsType[*core.SettingError](err); !ok || se.Key != key {
			t.Errorf("New: err = %v, want a *core.SettingError with key %s", err, key)
		}
	}
}

func TestIndependentCredit(t *testing.T) {
	s := toySetup(2)
	s.Train.Credit = "independent"
	s.Train.Iterations = 2
	if err := train(t, s, t.TempDir(), false, context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestEvalSeedsDisjointFromTraining(t *testing.T) {
	train := map[uint64]bool{}
	for it := 0; it < 50; it++ {
		for k := 0; k < 16; k++ {
			train[rollout.TrainTaskSeed(1, it, k)] = true
		}
	}
	for i := 0; i < 1000; i++ {
		if train[rollout.EvalTaskSeed(1, i)] {
			t.Fatalf("eval seed %d is also a training seed", i)
		}
	}
}

var _ core.Env = (*toyEnv)(nil)

// truncatingToy is the toy env with a Truncate whose result carries a
// bonus reward for every agent.
type truncatingToy struct{ *toyEnv }

func (e truncatingToy) Spec() core.EnvSpec {
	s := e.toyEnv.Spec()
	s.Capabilities |= core.CapTruncate
	return s
}

func (e truncatingToy) Truncate() (core.StepResult, error) {
	return core.StepResult{Observations: e.obs(), Rewards: []float64{100, 100}, Truncated: true}, nil
}

// Rewards in the result of a budget stop's Truncate count toward the
// returns, like any step's.
func TestTruncateRewardsCount(t *testing.T) {
	s := toySetup(1)
	s.Budget = rollout.Budget{MaxTokens: 15}
	plain, trunc := s, s
	trunc.Env = truncSource{}
	found := false
	for seed := uint64(1); seed < 30 && !found; seed++ {
		a, err := rollout.RunEpisode(context.Background(), plain.Setup, nil, "random", seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		b, err := rollout.RunEpisode(context.Background(), trunc.Setup, nil, "random", seed, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Episode.BudgetStopped {
			continue
		}
		found = true
		for i := range a.Episode.AgentReturns {
			if got, want := b.Episode.AgentReturns[i], a.Episode.AgentReturns[i]+100; got != want {
				t.Fatalf("seed %d agent %d: return %v, want %v (the truncation's reward added)", seed, i, got, want)
			}
		}
	}
	if !found {
		t.Fatal("no episode was budget-stopped")
	}
}

type truncSource struct{}

func (truncSource) Spec() core.EnvSpec      { return truncatingToy{newToy()}.Spec() }
func (truncSource) Open() (core.Env, error) { return truncatingToy{newToy()}, nil }
func (truncSource) Close() error            { return nil }

func TestStepAfterCloseIsAnError(t *testing.T) {
	s := toySetup(1)
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	tr.Close()
	if _, _, err := tr.Step(context.Background()); err == nil || !strings.Contains(err.Error(), "after Close") {
		t.Fatalf("Step after Close: %v", err)
	}
}

// An iteration's mean metrics leave out core.MetricTask, a label of the
// task instance and not a measure, and average the others over the
// scored episodes.
func TestIterationMeansLeaveOutTheTaskLabel(t *testing.T) {
	results := []rollout.EpisodeResult{
		{Reward: 1, Metrics: map[string]float64{core.MetricTask: 3, "progress": 0.5}},
		{Reward: 0, Metrics: map[string]float64{core.MetricTask: 7, "progress": 1}},
		{Failed: true, Metrics: map[string]float64{core.MetricTask: 9, "progress": 0}},
	}
	var st IterationStats
	fillMeans(&st, results)
	if _, ok := st.Metrics[core.MetricTask]; ok {
		t.Fatalf("iteration metrics %v: the task label was averaged", st.Metrics)
	}
	if st.Metrics["progress"] != 0.75 || st.RewardMean != 0.5 {
		t.Fatalf("progress %v, reward %v; want 0.75 and 0.5 over the 2 scored episodes", st.Metrics["progress"], st.RewardMean)
	}
}
