package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/cmd/troupe/internal/bench"
)

func init() {
	commands["bench"] = command{"run the performance suite and print its table", runBench}
}

// pluginFlag collects repeated --wasm, --wasm-c or --grpc ENV=FILE flags:
// plugin builds of the step comparison's envs through one path.
type pluginFlag struct {
	path    string // bench.PathWasm, bench.PathWasmC or bench.PathGRPC
	plugins *[]bench.Plugin
}

// String returns the plugins of this path (flag.Value).
func (f pluginFlag) String() string {
	if f.plugins == nil {
		return ""
	}
	var out []string
	for _, p := range *f.plugins {
		if p.Path == f.path {
			out = append(out, p.Env+"="+p.File)
		}
	}
	return strings.Join(out, " ")
}

// Set appends one ENV=FILE (flag.Value).
func (f pluginFlag) Set(v string) error {
	env, file, ok := strings.Cut(v, "=")
	if !ok || env == "" || file == "" {
		return fmt.Errorf("want ENV=FILE, got %q", v)
	}
	*f.plugins = append(*f.plugins, bench.Plugin{Env: env, Path: f.path, File: file})
	return nil
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench", "bench [--json] [--quick] [--only SECTION,…] [--wasm|--wasm-c|--grpc ENV=FILE]… [--train FILE]… [--target FILE] [--out FILE]", stdout, stderr)
	asJSON := fs.Bool("json", false, "print the report as one JSON object instead of tables")
	out := fs.String("out", "", "also write the JSON report to FILE")
	quick := fs.Bool("quick", false, "a short run (about 30 s): shorter timings, no time-to-target run")
	only := fs.String("only", "", "comma-separated sections to run: "+strings.Join(bench.AllSections, ", ")+" (default: all; target is left out with --quick)")
	var plugins []bench.Plugin
	fs.Var(pluginFlag{bench.PathWasm, &plugins}, "wasm", "measure env ENV (lbf, writing) through this Wasm module built from its Go source, as ENV=FILE (repeatable; scripts/bench.sh builds them)")
	fs.Var(pluginFlag{bench.PathWasmC, &plugins}, "wasm-c", "measure env ENV (lbf) through this Wasm module built from its C port, as ENV=FILE")
	fs.Var(pluginFlag{bench.PathGRPC, &plugins}, "grpc", "measure env ENV (lbf, writing) through this go-plugin binary, as ENV=FILE (repeatable)")
	var train setFlags
	fs.Var(&train, "train", "an agentfile of the training section (repeatable; default: "+trainDefault()+")")
	target := fs.String("target", bench.TargetAgentfile, "the agentfile of the time-to-target run")
	stepTime := fs.Duration("benchtime", 0, "minimum timed duration of each micro-benchmark (default 1s, 200ms with --quick)")
	targetTimeout := fs.Duration("target-timeout", 15*time.Minute, "give up the time-to-target run after this long")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	o := bench.Options{Quick: *quick, Plugins: plugins, TrainAgentfiles: train, TargetAgentfile: *target,
		Log: stderr, StepTime: *stepTime, TargetTimeout: *targetTimeout}
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			o.Sections = append(o.Sections, strings.TrimSpace(s))
		}
	}
	rep, runErr := bench.Run(ctx, o)
	if errors.Is(runErr, bench.ErrUnknownSection) || errors.Is(runErr, bench.ErrUnknownPlugin) {
		fmt.Fprintf(stderr, "troupe: bench: %v\n", runErr)
		return exitUsage
	}
	// On a failure or Ctrl-C the report holds what was measured so far;
	// print it before the error.
	code := exitOK
	defer func() {
		switch {
		case errors.Is(runErr, context.Canceled):
			fmt.Fprintln(stderr, "troupe: bench interrupted; the report above is partial")
		case runErr != nil:
			fmt.Fprintf(stderr, "troupe: bench: %v\n", runErr)
		}
	}()
	code = benchExitCode(rep, runErr, stderr)
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	js = append(js, '\n')
	if *out != "" {
		if err := os.WriteFile(*out, js, 0o644); err != nil {
			fmt.Fprintf(stderr, "troupe: %v\n", err)
			return exitRuntime
		}
	}
	if *asJSON {
		if _, err := stdout.Write(js); err != nil {
			return exitRuntime
		}
		return code
	}
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return exitRuntime
	}
	return code
}

// benchExitCode is 1 when the suite failed or any check did not pass
// (each failed check is named on stderr), else 0.
func benchExitCode(rep bench.Report, runErr error, stderr io.Writer) int {
	failed := rep.Failed()
	for _, c := range failed {
		fmt.Fprintf(stderr, "troupe: bench: check failed: %s\n", c)
	}
	if runErr != nil || len(failed) > 0 {
		return exitRuntime
	}
	return exitOK
}

// trainDefault lists the training section's default agentfiles.
func trainDefault() string {
	var paths []string
	for _, e := range bench.TrainEnvs {
		paths = append(paths, e.Agentfile)
	}
	return strings.Join(paths, " and ")
}
