package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/policy"
)

// setFlags collects repeated --set key=value flags.
type setFlags []string

// String returns the overrides joined by spaces (flag.Value).
func (s *setFlags) String() string { return strings.Join(*s, " ") }

// Set appends one override (flag.Value).
func (s *setFlags) Set(v string) error { *s = append(*s, v); return nil }

// projectFlags are the flags every project command shares.
type projectFlags struct {
	file string
	sets setFlags
}

func (p *projectFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&p.file, "f", "agentfile.toml", "the project file")
	fs.Var(&p.sets, "set", "override a dotted key, e.g. --set reward.weights.speed=0.5 (repeatable)")
}

// load reads the project file, or a run directory's config.toml (whose
// keys that have since moved are read with a warning); errors are printed
// and mapped to exit 2.
func (p *projectFlags) load(stderr io.Writer) (agentfile.Config, bool) {
	warn := func(msg string) { fmt.Fprintf(stderr, "troupe: %s\n", msg) }
	cfg, err := agentfile.LoadWithWarnings(p.file, warn, p.sets...)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return cfg, false
	}
	return cfg, true
}

// open loads the project file and the policy file (if any) and builds the
// setup: what eval and run share. The LLM backends report their retries
// to prog (see watchRetries). It returns the configuration it built
// from. Errors are printed; ok false means exit 2.
func (p *projectFlags) open(ctx context.Context, policyPath string, prog *progress, stderr io.Writer) (*policy.Policy, agentfile.Config, *agentfile.Built, bool) {
	cfg, ok := p.load(stderr)
	if !ok {
		return nil, cfg, nil, false
	}
	watchRetries(&cfg, prog)
	if cfg.Telemetry.Output == nil {
		// The stdout exporter writes to stderr: stdout is the command's
		// report (eval's table or JSON, run's transcript).
		cfg.Telemetry.Output = stderr
	}
	pol, ok := loadPolicy(policyPath, stderr)
	if !ok {
		return nil, cfg, nil, false
	}
	built, ok := build(ctx, cfg, stderr)
	if !ok {
		return nil, cfg, nil, false
	}
	return pol, cfg, built, true
}

// build loads the env, rewards and LLMs. Failures are configuration errors.
func build(ctx context.Context, cfg agentfile.Config, stderr io.Writer) (*agentfile.Built, bool) {
	b, err := cfg.Build(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "troupe: %v\n", err)
		return nil, false
	}
	return b, true
}

// newFlagSet returns a flag set that prints -h/--help to stdout and
// errors, with the usage after them, to stderr. A caller that reports a
// usage error of its own and then calls fs.Usage writes the error to
// fs.Output(), so that the usage follows it on stderr.
func newFlagSet(name, usage string, stdout, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	out := &errorOutput{w: stderr}
	fs.SetOutput(out)
	fs.Usage = func() {
		// The flag package calls Usage with nothing written before it only
		// for -h/--help.
		w := stdout
		if out.written {
			w = stderr
		}
		out.written = false
		fmt.Fprintf(w, "usage: troupe %s\n\nflags:\n", usage)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(out)
	}
	return fs
}

// errorOutput is a flag set's output: stderr, noting that an error was
// written.
type errorOutput struct {
	w       io.Writer
	written bool
}

func (e *errorOutput) Write(p []byte) (int, error) {
	e.written = true
	return e.w.Write(p)
}

// parse parses args; it returns the exit code to use when ok is false.
func parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitUsage, false
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "troupe %s: unexpected argument %q\n", fs.Name(), fs.Arg(0))
		return exitUsage, false
	}
	return 0, true
}

// loadPolicy reads a policy file; an empty path means none.
func loadPolicy(path string, stderr io.Writer) (*policy.Policy, bool) {
	if path == "" {
		return nil, true
	}
	if _, err := os.Stat(path); err != nil {
		fmt.Fprintf(stderr, "troupe: --policy: %v\n", err)
		return nil, false
	}
	p, err := policy.Load(path)
	if err != nil {
		// policy.Load's errors name the file.
		fmt.Fprintf(stderr, "troupe: --policy: %v\n", err)
		return nil, false
	}
	return p, true
}
