package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeRunWrittenBeforeRolloutMoved checks that --resume reads a run
// directory whose config.toml was written when workers and max_steps
// were [train] keys: as the [rollout] keys they are now, with one warning.
// So does every command given that config.toml with -f.
func TestResumeRunWrittenBeforeRolloutMoved(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := troupe(t, "train", "-f", writeAgentfile(t, climbing), "--out", out, "--no-eval"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	conf := filepath.Join(out, "config.toml")
	b, err := os.ReadFile(conf)
	if err != nil {
		t.Fatal(err)
	}
	// Rewrite config.toml as a run of before the move wrote it.
	text := string(b)
	rollout := "[rollout]\n  workers = 2\n  max_steps = 1000\n"
	if !strings.Contains(text, rollout) || !strings.Contains(text, "[train]\n") {
		t.Fatalf("config.toml has no %q and [train]:\n%s", rollout, text)
	}
	text = strings.Replace(text, rollout, "", 1)
	text = strings.Replace(text, "[train]\n", "[train]\n  workers = 1\n  max_steps = 1000\n", 1)
	writeOld := func() {
		t.Helper()
		if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeOld()
	warning := "read train.max_steps as rollout.max_steps, train.workers as rollout.workers"
	for _, args := range [][]string{
		{"eval", "-f", conf, "--episodes", "1"},
		{"run", "-f", conf},
		{"train", "--resume", out, "-f", conf, "--no-eval"},
	} {
		code, _, stderr := troupe(t, args...)
		if code != exitOK {
			t.Fatalf("%s: exit %d: %s", strings.Join(args, " "), code, stderr)
		}
		if n := strings.Count(stderr, warning); n != 1 {
			t.Errorf("%s: the warning %q appears %d times, want once:\n%s", strings.Join(args, " "), warning, n, stderr)
		}
	}
	writeOld() // the resumed run rewrote it
	code, _, stderr := troupe(t, "train", "--resume", out, "--no-eval", "--set", "train.iterations=4")
	if code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
	if n := strings.Count(stderr, warning); n != 1 {
		t.Errorf("the warning %q appears %d times, want once:\n%s", warning, n, stderr)
	}
	if !strings.Contains(stderr, ", 1 workers,") {
		t.Errorf("the resumed run does not use the old train.workers = 1:\n%s", stderr)
	}
	// An agentfile, or an override, with the old key is told where it went.
	code, _, stderr = troupe(t, "train", "--resume", out, "--no-eval", "--set", "train.workers=1")
	if code != exitUsage || !strings.Contains(stderr, "troupe: --set: train.workers: moved to [rollout] workers") {
		t.Errorf("--set train.workers: exit %d, stderr %q", code, stderr)
	}
}
