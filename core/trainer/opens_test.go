package trainer_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
)

// teamEnv is a five-agent task with a text decision, a simulator and a
// baseline: everything that once made the runtime open an env just to
// look at it. Each of three steps, an agent that writes scores 1.
type teamEnv struct{ t int }

func (e *teamEnv) Spec() core.EnvSpec {
	return core.EnvSpec{
		Name: "team", Agents: []string{"a", "b", "c", "d", "e"}, ObsSize: 1,
		Decisions: []core.DecisionSpec{{Name: "wait"}, {Name: "write", NeedsText: true}},
		Metrics:   []string{core.MetricMakespan, core.MetricReturn},
		Baselines: []string{"all_write"}, ReferenceBaseline: "all_write",
		Capabilities: core.CapSimulate | core.CapBaseline,
	}
}

func (e *teamEnv) obs() []core.Observation {
	obs := make([]core.Observation, 5)
	for i := range obs {
		obs[i].Features = []float64{float64(e.t)}
	}
	return obs
}

func (e *teamEnv) Reset(uint64) ([]core.Observation, error) { e.t = 0; return e.obs(), nil }

func (e *teamEnv) Step(a []core.Action) (core.StepResult, error) {
	e.t++
	ret := 0.0
	for _, x := range a {
		if x.Decision == 1 {
			ret++
		}
	}
	return core.StepResult{Observations: e.obs(), Terminated: e.t == 3,
		Metrics: map[string]float64{core.MetricMakespan: float64(e.t), core.MetricReturn: ret}}, nil
}

func (e *teamEnv) State() []float64 { return nil }
func (e *teamEnv) Close() error     { closes.Add(1); return nil }

func (e *teamEnv) Simulate(agent, _ int, _ core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	return core.SimCompletion{Text: fmt.Sprintf("agent %d: %d", agent, rng.IntN(9)), CompletionTokens: 3}, nil
}

func (e *teamEnv) Baseline(string) (core.Baseline, error) { return allWrite{}, nil }

type allWrite struct{}

func (allWrite) Act(obs []core.Observation) ([]int, error) {
	return []int{1, 1, 1, 1, 1}, nil
}

// opens counts the team envs made, by any path, and closes their Close
// calls.
var opens, closes atomic.Int64

func newTeam(map[string]any) (core.Env, error) {
	opens.Add(1)
	return &teamEnv{}, nil
}

type returnReward struct{}

func (returnReward) Name() string         { return "team.return" }
func (returnReward) Components() []string { return []string{"return"} }
func (returnReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"return": ep.Metrics[core.MetricReturn]}, nil, nil
}

func init() {
	core.RegisterEnv("test.team", newTeam)
	core.RegisterReward("test.team.return", func(map[string]any) (core.RewardFunc, error) { return returnReward{}, nil })
}

// Building a trainer and evaluating open the env once per worker each:
// the spec comes from the source, the optional interfaces from the spec,
// and the env the source made at load to check its params is the first
// worker's, so a W-worker trainer built from an agentfile makes W envs,
// not W+1.
func TestEnvOpenedOncePerWorker(t *testing.T) {
	ctx := context.Background()
	for _, workers := range []int{1, 3} {
		t.Run(fmt.Sprint(workers, " workers"), func(t *testing.T) {
			opens.Store(0)
			cfg, err := agentfile.Parse("team.toml", fmt.Appendf(nil, `[project]
name = "team"
[env]
source = "builtin:test.team"
[[rewards]]
source = "builtin:test.team.return"
[reward.weights]
return = 1.0
[train]
iterations = 1
tasks_per_iteration = 2
group_size = 2
[rollout]
workers = %d
`, workers))
			if err != nil {
				t.Fatal(err)
			}
			built, err := cfg.Build(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer built.Close()
			if n := opens.Load(); n != 1 {
				t.Fatalf("loading and building opened the env %d times, want 1 (the load-time check)", n)
			}
			tr, err := trainer.New(built.Setup, built.Train)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			if _, _, err := tr.Step(ctx); err != nil {
				t.Fatal(err)
			}
			if n := opens.Load(); n != int64(workers) {
				t.Fatalf("loading, building, trainer.New and a step opened the env %d times, want %d (one per worker, the first being the load-time one)", n, workers)
			}
			opens.Store(0)
			rep, err := rollout.Evaluate(ctx, built.Setup, tr.Policy(), rollout.Eval{Episodes: 4, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if n := opens.Load(); n != int64(workers) {
				t.Fatalf("Evaluate opened the env %d times, want %d (one per worker)", n, workers)
			}
			if got := rep.Policies["all_write"]; got.Reward != 5 || got.Speedup != 1 || rep.Reference != "all_write" {
				t.Fatalf("baseline all_write: reward %v, speedup %v, reference %q; want 5, 1, all_write", got.Reward, got.Speedup, rep.Reference)
			}
		})
	}
}

// Closing a trainer twice closes each worker's env once: a caller may end
// the workers before an evaluation and still defer Close.
func TestTrainerCloseTwice(t *testing.T) {
	src, err := core.NewEnvSource(newTeam, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	setup := rollout.Setup{Name: "team", Env: src, Rewards: []core.RewardFunc{returnReward{}},
		Weights: map[string]float64{"return": 1}, Rollout: rollout.Config{Workers: 2}, Seed: 1}
	tr, err := trainer.New(setup, trainer.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	closes.Store(0)
	tr.Close()
	tr.Close()
	if n := closes.Load(); n != 2 {
		t.Fatalf("closing a 2-worker trainer twice closed envs %d times, want 2", n)
	}
}
