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
	"github.com/troupe-dev/troupe/core/runtime"
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
	train := runtime.DefaultTrain()
	train.Iterations, train.TasksPerIteration, train.GroupSize = 40, 16, 8
	train.Optimizer.Entropy = 0.01
	setup := runtime.Setup{
		Name:    "embedded-lbf",
		Env:     env,
		Rewards: []core.RewardFunc{rewards.Return{}},
		Weights: map[string]float64{"return": 1},
		Train:   train,
		Eval:    runtime.Eval{Episodes: 100, Seed: 1},
		Seed:    1,
	}
	tr, err := runtime.NewTrainer(setup)
	if err != nil {
		return err
	}
	defer tr.Close()
	dir, err := os.MkdirTemp("", "troupe-embed-")
	if err != nil {
		return err
	}
	err = tr.Run(ctx, runtime.RunOptions{Out: dir, Progress: func(st runtime.IterationStats) {
		fmt.Printf("iteration %d: mean return %.3f\n", st.Iteration, st.Components["return"])
	}})
	if err != nil {
		return err
	}
	rep, err := runtime.Evaluate(ctx, setup, tr.Policy(), setup.Eval)
	if err != nil {
		return err
	}
	rep.WriteTable(os.Stdout)
	fmt.Println("run directory:", dir)
	return nil
}
