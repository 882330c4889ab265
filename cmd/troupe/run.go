package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
)

func init() {
	commands["run"] = command{"play one episode with decentralized execution and write its artifacts", runRun}
}

func runRun(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "run [-f agentfile.toml] [--policy FILE | --baseline NAME] [--seed S] [--out DIR] [--set key=value]...", stdout, stderr)
	var pf projectFlags
	pf.register(fs)
	pol := fs.String("policy", "", "trained policy (policy.safetensors)")
	baseline := fs.String("baseline", "", "play a baseline instead of a trained policy (e.g. sop, single_agent, random)")
	seed := fs.Uint64("seed", 1, "task seed")
	out := fs.String("out", "", "directory for the artifacts (default: not written)")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	if *pol != "" && *baseline != "" {
		fmt.Fprintln(stderr, "troupe run: give --policy or --baseline, not both")
		return exitUsage
	}
	if *pol == "" && *baseline == "" {
		*baseline = "random"
	}
	prog := newProgress(stderr, 0)
	defer prog.done()
	p, _, built, ok := pf.open(ctx, *pol, prog, stderr)
	if !ok {
		return exitUsage
	}
	defer warnDroppedSpans(built, stderr) // after Close, which flushes
	defer built.Close()
	spec := built.Setup.Env.Spec()
	if p == nil {
		if err := (rollout.Eval{Policies: []string{*baseline}}).CheckPolicies(spec, false); err != nil {
			fmt.Fprintf(stderr, "troupe run: --baseline: %s\n", err.(*core.SettingError).Msg)
			return exitUsage
		}
	}
	who := *baseline
	if p != nil {
		who = "grpo policy " + *pol
	}
	fmt.Fprintf(stdout, "episode: env %s, seed %d, %s, LLM %s\n", spec.Name, *seed, who, describeBackend(built.Setup.Backend(spec)))
	observe := func(ev rollout.StepEvent) {
		var parts []string
		for i, d := range ev.Decisions {
			name := spec.Decisions[d].Name
			if spec.Decisions[d].NeedsText {
				name += fmt.Sprintf(" (%d chars)", len(ev.Texts[i]))
			}
			parts = append(parts, fmt.Sprintf("%s: %s", spec.Agents[i], name))
		}
		fmt.Fprintf(stdout, "step %3d  %s\n", ev.Step, strings.Join(parts, "  "))
	}
	res, err := rollout.RunEpisode(ctx, built.Setup, p, *baseline, *seed, observe)
	if err != nil {
		fmt.Fprintf(stderr, "troupe run: %v\n", err)
		return exitRuntime
	}
	fmt.Fprintf(stdout, "reward %.4f", res.Reward)
	for _, k := range slices.Sorted(maps.Keys(res.Components)) {
		fmt.Fprintf(stdout, "  %s %.4f", k, res.Components[k])
	}
	fmt.Fprintln(stdout)
	for _, k := range slices.Sorted(maps.Keys(res.Metrics)) {
		if !strings.Contains(k, ".") {
			fmt.Fprintf(stdout, "  %s = %g\n", k, res.Metrics[k])
		}
	}
	if *out != "" {
		if err := os.MkdirAll(*out, 0o755); err != nil {
			fmt.Fprintf(stderr, "troupe run: %v\n", err)
			return exitRuntime
		}
		for _, name := range slices.Sorted(maps.Keys(res.Episode.Artifacts)) {
			path := filepath.Join(*out, filepath.Base(name))
			if err := os.WriteFile(path, res.Episode.Artifacts[name], 0o644); err != nil {
				fmt.Fprintf(stderr, "troupe run: %v\n", err)
				return exitRuntime
			}
			fmt.Fprintf(stdout, "wrote %s\n", path)
		}
	}
	return exitOK
}
