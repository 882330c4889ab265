// Command embed trains a team from a Go program, with no agentfile: the
// built-in Level-Based Foraging env, the "return" reward and GRPO, then
// prints the evaluation table and saves the policy.
//
//	go run ./examples/embed
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
	_ "github.com/troupe-dev/troupe/envs/lbf" // registers builtin:lbf
	"github.com/troupe-dev/troupe/rewards"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	env, err := core.LoadEnv(ctx, core.SourceRef{Scheme: "builtin", Path: "lbf", Params: map[string]any{"size": 5, "foods": 1}})
	if err != nil {
		return err
	}
	defer env.Close()
	train := trainer.DefaultConfig()
	train.Iterations, train.TasksPerIteration, train.GroupSize = 40, 16, 8
	train.Entropy = 0.01
	setup := rollout.Setup{
		Name:    "embedded-lbf",
		Env:     env,
		Rewards: []core.RewardFunc{rewards.Return{}},
		Weights: map[string]float64{"return": 1},
		Seed:    1,
	}
	tr, err := trainer.New(setup, train)
	if err != nil {
		return err
	}
	defer tr.Close()
	dir, err := os.MkdirTemp("", "troupe-embed-")
	if err != nil {
		return err
	}
	err = tr.Run(ctx, trainer.RunOptions{Out: dir, Progress: func(st trainer.IterationStats) {
		fmt.Printf("iteration %d: mean return %.3f\n", st.Iteration, st.Components["return"])
	}})
	if err != nil {
		return err
	}
	rep, err := rollout.Evaluate(ctx, setup, tr.Policy(), rollout.Eval{Episodes: 100, Seed: 1})
	if err != nil {
		return err
	}
	rep.WriteTable(os.Stdout)
	fmt.Println("run directory:", dir)
	return nil
}
