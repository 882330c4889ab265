package core_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
)

// meetEnv is a native env written in code: two agents must both pick the
// meeting point the task draws from its seed, and see a hint of it.
type meetEnv struct {
	point, t int
}

func (e *meetEnv) Spec() core.EnvSpec {
	return core.EnvSpec{
		Name: "meet", Agents: []string{"alice", "bob"}, ObsSize: 3,
		Decisions: []core.DecisionSpec{{Name: "north"}, {Name: "south"}, {Name: "east"}},
	}
}

func (e *meetEnv) obs() []core.Observation {
	hint := make([]float64, 3)
	hint[e.point] = 1
	return []core.Observation{{Features: hint}, {Features: hint}}
}

func (e *meetEnv) Reset(seed uint64) ([]core.Observation, error) {
	e.point, e.t = rand.New(rand.NewPCG(seed, 0)).IntN(3), 0
	return e.obs(), nil
}

func (e *meetEnv) Step(a []core.Action) (core.StepResult, error) {
	e.t++
	met := 0.0
	if a[0].Decision == e.point && a[1].Decision == e.point {
		met = 1
	}
	return core.StepResult{
		Observations: e.obs(), Terminated: true,
		Metrics: map[string]float64{core.MetricReturn: met, core.MetricMakespan: 1, core.MetricReferenceMakespan: 1},
	}, nil
}

func (e *meetEnv) State() []float64 { return nil }
func (e *meetEnv) Close() error     { return nil }

// metReward scores 1 when the agents met.
type metReward struct{}

func (metReward) Name() string         { return "met" }
func (metReward) Components() []string { return []string{"quality"} }
func (metReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"quality": ep.Metrics[core.MetricReturn]}, nil, nil
}

// Train a team on an env written in Go, without any agentfile, and compare
// the trained policy with random play on held-out seeds.
func Example() {
	train := trainer.DefaultConfig()
	train.Iterations, train.TasksPerIteration, train.GroupSize = 30, 8, 8
	train.Hidden, train.LearningRate = []int{16}, 0.03
	src, err := core.NewEnvSource(func(map[string]any) (core.Env, error) { return &meetEnv{}, nil }, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	setup := rollout.Setup{
		Name:    "meet",
		Env:     src,
		Rewards: []core.RewardFunc{metReward{}},
		Weights: map[string]float64{"quality": 1},
		Rollout: rollout.Config{Workers: 2},
		Seed:    7,
	}
	tr, err := trainer.New(setup, train)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	for i := 0; i < train.Iterations; i++ {
		if _, _, err := tr.Step(context.Background()); err != nil {
			fmt.Println(err)
			return
		}
	}
	rep, err := rollout.Evaluate(context.Background(), setup, tr.Policy(), rollout.Eval{Episodes: 200, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("trained: %.2f\n", rep.Policies["grpo"].Reward)
	fmt.Printf("random:  %.2f\n", rep.Policies["random"].Reward)
	// Output:
	// trained: 1.00
	// random:  0.12
}

// Follow a long evaluation: Eval.Progress says when each policy's
// episodes are done, rollout.WithEpisodeDone each episode (from the
// workers' goroutines, so the counter is atomic).
func Example_progress() {
	src, err := core.NewEnvSource(func(map[string]any) (core.Env, error) { return &meetEnv{}, nil }, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	setup := rollout.Setup{
		Name: "meet", Env: src, Rewards: []core.RewardFunc{metReward{}},
		Weights: map[string]float64{"quality": 1}, Rollout: rollout.Config{Workers: 2},
	}
	var episodes atomic.Int64
	ctx := rollout.WithEpisodeDone(context.Background(), func() { episodes.Add(1) })
	e := rollout.Eval{Episodes: 50, Seed: 1, Progress: func(policy string, done, total int) {
		if done > 0 {
			fmt.Printf("%s done (%d of %d), %d episodes so far\n", policy, done, total, episodes.Load())
		}
	}}
	if _, err := rollout.Evaluate(ctx, setup, nil, e); err != nil {
		fmt.Println(err)
	}
	// Output:
	// random done (1 of 1), 50 episodes so far
}
