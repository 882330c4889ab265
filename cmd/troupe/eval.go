package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/troupe-dev/troupe/core/rollout"
)

func init() {
	commands["eval"] = command{"evaluate a trained policy and every baseline on held-out seeds", runEval}
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("eval", "eval [-f agentfile.toml] [--policy FILE] [--episodes N] [--seed S] [--sampled] [--json] [--set key=value]...", stderr)
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
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["episodes"] && *episodes < 1 {
		fmt.Fprintf(stderr, "troupe eval: --episodes must be at least 1, got %d\n", *episodes)
		return exitUsage
	}
	p, built, ok := pf.open(ctx, *pol, stderr)
	if !ok {
		return exitUsage
	}
	defer built.Close()
	e := built.Eval
	if given["episodes"] {
		e.Episodes = *episodes
	}
	if given["seed"] {
		e.Seed = *seed
	}
	e.Sampled = e.Sampled || *sampled
	rep, err := rollout.Evaluate(ctx, built.Setup, p, e)
	if err != nil {
		fmt.Fprintf(stderr, "troupe eval: %v\n", err)
		return exitRuntime
	}
	if *asJSON {
		b, err := json.Marshal(rep)
		if err != nil {
			fmt.Fprintf(stderr, "troupe eval: %v\n", err)
			return exitRuntime
		}
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	rep.WriteTable(stdout)
	return exitOK
}
