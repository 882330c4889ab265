package main

import (
	"bytes"
	"errors"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/cmd/troupe/internal/bench"
)

// Help asked for goes to stdout with exit 0; usage errors go to stderr
// with exit 2.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		code, stdout, stderr := troupe(t, args...)
		if code != exitOK || !strings.Contains(stdout, "usage: troupe <command>") || !strings.Contains(stdout, "train") || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the usage on stdout and exit 0", args, code, stdout, stderr)
		}
	}
	for _, args := range [][]string{{"train", "-h"}, {"train", "--help"}, {"eval", "-h"}, {"help", "train"}, {"export", "-h"}, {"new", "-h"}, {"inspect", "--help"}, {"version", "-h"}} {
		code, stdout, stderr := troupe(t, args...)
		if code != exitOK || !strings.Contains(stdout, "usage: troupe ") || !strings.Contains(stdout, "flags:") || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the command's usage on stdout and exit 0", args, code, stdout, stderr)
		}
	}
	for _, args := range [][]string{{}, {"nosuch"}, {"help", "nosuch"}, {"train", "--bogus"}, {"export", "a", "b"}, {"new", "env"}, {"inspect"}} {
		code, stdout, stderr := troupe(t, args...)
		if code != exitUsage || stdout != "" || !strings.Contains(stderr, "usage: troupe") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want the usage on stderr and exit 2", args, code, stdout, stderr)
		}
	}
	if code, stdout, stderr := troupe(t, "eval", "extra"); code != exitUsage || stdout != "" || !strings.Contains(stderr, `unexpected argument "extra"`) {
		t.Errorf("eval extra: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	// The error comes before the usage.
	_, _, stderr := troupe(t, "train", "--bogus")
	if i, j := strings.Index(stderr, "-bogus"), strings.Index(stderr, "usage:"); i < 0 || j < i {
		t.Errorf("stderr %q: want the error, then the usage", stderr)
	}
}

// troupe --version and troupe version print the module version and the
// Go version; the VCS revision when the build recorded one.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"version"}} {
		code, stdout, stderr := troupe(t, args...)
		if code != exitOK || !strings.HasPrefix(stdout, "troupe ") || !strings.HasSuffix(stdout, runtime.Version()+"\n") || stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, stdout, stderr)
		}
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/troupe-dev/troupe", Version: "v0.3.0"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "c54a3f3"}, {Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionLine(info), "troupe v0.3.0 (rev c54a3f3, modified, 2026-12-01T10:00:00Z) go1.26.0"; got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
	info.Settings = nil
	if got, want := versionLine(info), "troupe v0.3.0 go1.26.0"; got != want {
		t.Errorf("without VCS settings: %q, want %q", got, want)
	}
}

// troupe bench exits 1 when a check fails, naming it, and when the suite
// fails; 0 when every check passes.
func TestBenchExitCode(t *testing.T) {
	pass := bench.Check{Name: "fast enough", Value: 1, Op: "<=", Bound: 2, Pass: true}
	fail := bench.Check{Name: "LLM: throughput ÷ ideal", Value: 0.5, Op: ">=", Bound: 0.9, Pass: false}
	var e bytes.Buffer
	if code := benchExitCode(bench.Report{Checks: []bench.Check{pass}}, nil, &e); code != exitOK || e.Len() != 0 {
		t.Errorf("all pass: exit %d, stderr %q", code, e.String())
	}
	if code := benchExitCode(bench.Report{Checks: []bench.Check{pass, fail}}, nil, &e); code != exitRuntime || !strings.Contains(e.String(), "check failed: LLM: throughput ÷ ideal: 0.5") {
		t.Errorf("a failed check: exit %d, stderr %q; want 1 naming it", code, e.String())
	}
	e.Reset()
	ran := bench.Check{Name: "env step lbf wasm ran (skipped above: it failed)", Op: bench.OpRan}
	if code := benchExitCode(bench.Report{Checks: []bench.Check{ran}}, nil, &e); code != exitRuntime || e.String() != "troupe: bench: check failed: env step lbf wasm ran (skipped above: it failed)\n" {
		t.Errorf("a row that failed to run: exit %d, stderr %q; want 1 and the row named alone", code, e.String())
	}
	if code := benchExitCode(bench.Report{}, errors.New("boom"), &e); code != exitRuntime {
		t.Errorf("a failed suite: exit %d", code)
	}
}

// troupe eval without --policy says that grpo is left out, and how to
// include it; given a run directory's config.toml it evaluates the run's
// policy.
func TestEvalWithoutPolicy(t *testing.T) {
	af := writeAgentfile(t, climbing)
	code, stdout, stderr := troupe(t, "eval", "-f", af, "--episodes", "1")
	if code != exitOK || strings.Contains(stdout, "grpo") || !strings.Contains(stderr, "only the baselines are evaluated, not grpo") || !strings.Contains(stderr, "--policy RUN_DIR/policy.safetensors") {
		t.Fatalf("eval without a policy: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	code, stdout, stderr = troupe(t, "eval", "-f", filepath.Join(out, "config.toml"), "--episodes", "1")
	if code != exitOK || !strings.Contains(stdout, "grpo") || !strings.Contains(stderr, "evaluating the run's trained policy "+filepath.Join(out, "policy.safetensors")) {
		t.Fatalf("eval of a run's config.toml: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
