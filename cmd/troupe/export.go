package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/troupe-dev/troupe/cmd/troupe/internal/report"
	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/trainer"
)

func init() {
	commands["export"] = command{"export a run's LLM calls as GRPO data for TRL or verl", runExport}
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("export", "export --format jsonl [--out FILE] RUN_DIR", stdout, stderr)
	format := fs.String("format", "jsonl", "output format: jsonl (TRL's conversational prompt/completion layout, also read by verl)")
	out := fs.String("out", "", "output file (default: standard output)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(fs.Output(), "troupe export: want one RUN_DIR (flags go before it), got %d arguments\n", fs.NArg())
		fs.Usage()
		return exitUsage
	}
	if *format != "jsonl" {
		fmt.Fprintf(stderr, "troupe export: unknown --format %q (have jsonl)\n", *format)
		return exitUsage
	}
	dir := fs.Arg(0)
	if noRunDir(stderr, "troupe export: "+dir, dir) {
		return exitUsage
	}
	// Only iterations that made it into metrics.jsonl count (a run
	// interrupted mid-iteration may have recorded more).
	upTo := 0
	if stats, err := report.ReadMetrics(filepath.Join(dir, "metrics.jsonl")); err == nil && len(stats) > 0 {
		upTo = stats[len(stats)-1].Iteration
	}
	samples, err := trainer.ReadLLMSamples(dir, upTo)
	if os.IsNotExist(err) {
		fmt.Fprintf(stderr, "troupe export: %s has no %s: only runs with a real LLM backend (backend = \"openai\") record their calls; the sim backend's texts are the task's own surrogate\n", dir, trainer.LLMSamplesFile)
		return exitUsage
	}
	if err != nil {
		fmt.Fprintf(stderr, "troupe export: %v\n", err)
		return exitRuntime
	}
	w := stdout
	if *out != "" {
		f, err := os.Create(*out)
		if err != nil {
			fmt.Fprintf(stderr, "troupe export: %v\n", err)
			return exitRuntime
		}
		defer f.Close()
		w = f
	}
	if err := llm.WriteTRL(w, samples); err != nil {
		fmt.Fprintf(stderr, "troupe export: %v\n", err)
		return exitRuntime
	}
	fmt.Fprintf(stderr, "troupe export: %d samples\n", len(samples))
	return exitOK
}
