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

	"github.com/troupe-dev/troupe/internal/bench"
)

func init() {
	commands["bench"] = command{"run the performance suite and print its table", runBench}
}

func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("bench", "bench [--json] [--quick] [--only SECTION,…] [--repo DIR] [--out FILE]", stderr)
	asJSON := fs.Bool("json", false, "print the report as one JSON object instead of tables")
	out := fs.String("out", "", "also write the JSON report to FILE")
	quick := fs.Bool("quick", false, "a short run (about 30 s): shorter timings, no time-to-target run")
	only := fs.String("only", "", "comma-separated sections to run: "+strings.Join(bench.AllSections, ", ")+" (default: all; target is left out with --quick)")
	repo := fs.String("repo", "", "the troupe checkout to build plugins in and read agentfiles from (default: the module containing the current directory)")
	stepTime := fs.Duration("benchtime", 0, "minimum timed duration of each micro-benchmark (default 1s, 200ms with --quick)")
	targetTimeout := fs.Duration("target-timeout", 15*time.Minute, "give up the time-to-target run after this long")
	if code, ok := parse(fs, args); !ok {
		return code
	}
	o := bench.Options{Quick: *quick, RepoDir: *repo, Log: stderr, StepTime: *stepTime, TargetTimeout: *targetTimeout}
	if *only != "" {
		for _, s := range strings.Split(*only, ",") {
			o.Sections = append(o.Sections, strings.TrimSpace(s))
		}
	}
	rep, runErr := bench.Run(ctx, o)
	if errors.Is(runErr, bench.ErrUnknownSection) {
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
	if runErr != nil {
		code = exitRuntime
	}
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
