package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/trainer"
)

func init() {
	commands["eval"] = command{"evaluate a trained policy and every baseline on held-out seeds", runEval}
}

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("eval", "eval [-f agentfile.toml] [--policy FILE] [--episodes N] [--seed S] [--sampled] [--json] [--by-task] [--set key=value]... [--nats URL]", stdout, stderr)
	var pf projectFlags
	pf.register(fs)
	pol := fs.String("policy", "", "trained policy (policy.safetensors); without it only the baselines are evaluated")
	episodes := fs.Int("episodes", 0, "episodes per policy (default eval.episodes)")
	seed := fs.Uint64("seed", 0, "evaluation seed (default eval.seed)")
	sampled := fs.Bool("sampled", false, "sample the trained policy's decisions instead of taking the most likely")
	asJSON := fs.Bool("json", false, "print one JSON object (means, their 95% intervals, grpo's paired differences) instead of the tables")
	byTask := fs.Bool("by-task", false, "after the tables, grpo's paired difference in joint reward on each task instance (document, class) the seeds played; --json always has it (by_task)")
	nats := fs.String("nats", "", "play the episodes on troupe worker processes through the NATS server at `URL` (as --set cluster.nats=URL)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *nats != "" {
		pf.sets = append(pf.sets, "cluster.nats="+strconv.Quote(*nats))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if given["episodes"] && *episodes < 1 {
		fmt.Fprintf(stderr, "troupe eval: --episodes must be at least 1, got %d\n", *episodes)
		return exitUsage
	}
	if *pol == "" {
		*pol = discoverPolicy(pf.file, stderr)
	}
	prog := newProgress(stderr, 0)
	p, cfg, built, ok := pf.open(ctx, *pol, prog, stderr)
	if !ok {
		return exitUsage
	}
	defer warnDroppedSpans(built, stderr) // after Close, which flushes
	defer built.Close()
	c, closeCluster, err := clusterClient(ctx, cfg.Resolved(), built, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "troupe eval: %v\n", err)
		return exitRuntime
	}
	defer closeCluster()
	if c != nil {
		fmt.Fprintf(stderr, "troupe eval: episodes played by the workers of %s (start them with: troupe worker --nats URL)\n", built.Cluster.NATS)
	}
	e := built.Eval
	if given["episodes"] {
		e.Episodes = *episodes
	}
	if given["seed"] {
		e.Seed = *seed
	}
	e.Sampled = e.Sampled || *sampled
	ectx, progress := prog.evalProgress(ctx, e.Episodes)
	e.Progress = progress
	rep, err := evaluate(ectx, built.Setup, c, p, e)
	prog.done() // the live progress line, or a waiting status of the LLM calls
	switch {
	case err != nil && ctx.Err() != nil:
		done, total := prog.evalPolicies()
		fmt.Fprintf(stderr, "troupe eval: interrupted: %d of %d policies played their %d episodes; nothing is printed, because the tables compare every policy on the same seeds: run the command again\n",
			done, total, e.Episodes)
		return exitRuntime
	case err != nil:
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
	if *byTask && !rep.WriteTaskTable(stdout) {
		why := fmt.Sprintf("env %s reports no metric %q (the instance an episode plays)", rep.Env, core.MetricTask)
		if _, ok := rep.Policies["grpo"]; !ok {
			why = "it compares the trained policy with the others, and none was evaluated (give --policy)"
		}
		fmt.Fprintf(stderr, "troupe eval: --by-task: no table: %s\n", why)
	}
	return exitOK
}

// discoverPolicy returns the trained policy beside file when file is a run
// directory's config.toml (troupe eval -f RUN/config.toml), saying so on
// stderr; otherwise it notes that only the baselines will be evaluated and
// returns "".
func discoverPolicy(file string, stderr io.Writer) string {
	if base := filepath.Base(file); base == "config.toml" || strings.HasPrefix(base, "config.after-") {
		p := filepath.Join(filepath.Dir(file), "policy.safetensors")
		if _, err := os.Stat(p); err == nil {
			fmt.Fprintf(stderr, "troupe eval: evaluating the run's trained policy %s as grpo (give --policy to choose another)\n", p)
			if cur := trainer.CurrentConfig(filepath.Dir(file)); filepath.Clean(cur) != filepath.Clean(file) {
				fmt.Fprintf(stderr, "troupe eval: note: the run's settings were changed on --resume; %s is the configuration its last iterations used\n", cur)
			}
			return p
		}
	}
	fmt.Fprintf(stderr, "troupe eval: no --policy given: only the baselines are evaluated, not grpo; to include it, add --policy RUN_DIR/policy.safetensors (or use -f RUN_DIR/config.toml)\n")
	return ""
}
