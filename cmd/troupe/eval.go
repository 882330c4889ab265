package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/troupe-dev/troupe/core/runtime"
)

func init() {
	commands["eval"] = command{"evaluate a trained policy and every baseline on held-out seeds", runEval}
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("eval", "eval [-f agentfile.toml] [--policy FILE] [--episodes N] [--seed S] [--json] [--set key=value]...", stderr)
	var pf projectFlags
	pf.register(fs)
	pol := fs.String("policy", "", "trained policy (policy.safetensors); without it only the baselines are evaluated")
	episodes := fs.Int("episodes", 0, "episodes per policy (default eval.episodes)")
	seed := fs.Uint64("seed", 0, "evaluation seed (default eval.seed)")
	sampled := fs.Bool("sampled", false, "sample the trained policy's decisions instead of taking the most likely")
	asJSON := fs.Bool("json", false, "print one JSON object instead of a table")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	p, built, ok := pf.open(ctx, *pol, stderr)
	if !ok {
		return exitUsage
	}
	defer built.Close()
	e := built.Setup.Eval
	if *episodes != 0 {
		if *episodes < 0 {
			fmt.Fprintf(stderr, "troupe eval: --episodes must be positive, got %d\n", *episodes)
			return exitUsage
		}
		e.Episodes = *episodes
	}
	if *seed != 0 {
		e.Seed = *seed
	}
	e.Sampled = e.Sampled || *sampled
	rep, err := runtime.Evaluate(ctx, built.Setup, p, e)
	if err != nil {
		fmt.Fprintf(stderr, "troupe eval: %v\n", err)
		return exitRuntime
	}
	if *asJSON {
		b, _ := json.Marshal(rep)
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	rep.WriteTable(stdout)
	return exitOK
}
