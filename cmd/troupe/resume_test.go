package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core/trainer"
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
	rollout := "[rollout]\n  workers = 2\n  max_steps = 0\n"
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
	writeOld() // as before (a resumed run leaves config.toml as it is)
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

// --resume refuses settings that differ from the run's config.toml unless
// --accept-changes; then it records them (iteration, key, old and new) in
// changes.jsonl and leaves config.toml as the first iterations' record.
func TestResumeChangedSettings(t *testing.T) {
	af := writeAgentfile(t, climbing)
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	conf, err := os.ReadFile(filepath.Join(out, "config.toml"))
	if err != nil {
		t.Fatal(err)
	}
	changed := []string{"--set", "reward.weights.return=2", "--set", "train.iterations=4"}
	code, _, stderr := troupe(t, append([]string{"train", "--resume", out, "--no-eval"}, changed...)...)
	if code != exitUsage || !strings.Contains(stderr, "reward.weights.return: 1 → 2") || strings.Contains(stderr, "train.iterations: 3 → 4") || !strings.Contains(stderr, "--accept-changes") {
		t.Fatalf("changed weight: exit %d, stderr %q; want 2 naming reward.weights.return (and not the free train.iterations)", code, stderr)
	}
	// The same through -f: an agentfile that differs from the run.
	code, _, stderr = troupe(t, "train", "--resume", out, "--no-eval", "-f", writeAgentfile(t, strings.Replace(climbing, "return = 1.0", "return = 3.0", 1)))
	if code != exitUsage || !strings.Contains(stderr, "reward.weights.return: 1 → 3") {
		t.Fatalf("changed agentfile: exit %d, stderr %q", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "changes.jsonl")); !os.IsNotExist(err) {
		t.Fatalf("a refused resume wrote changes.jsonl (stat: %v)", err)
	}
	code, _, stderr = troupe(t, append([]string{"train", "--resume", out, "--no-eval", "--accept-changes"}, changed...)...)
	if code != exitOK {
		t.Fatalf("--accept-changes: exit %d: %s", code, stderr)
	}
	if now, _ := os.ReadFile(filepath.Join(out, "config.toml")); !bytes.Equal(now, conf) {
		t.Errorf("config.toml was rewritten:\n%s", now)
	}
	raw, err := os.ReadFile(filepath.Join(out, "changes.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rec trainer.ConfigChanges
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatalf("changes.jsonl: %v: %s", err, raw)
	}
	got := map[string]string{}
	for _, c := range rec.Changes {
		got[c.Key] = fmt.Sprintf("%v→%v", c.Old, c.New)
	}
	if rec.AfterIteration != 3 || len(got) != 2 || got["reward.weights.return"] != "1→2" || got["train.iterations"] != "3→4" {
		t.Fatalf("changes.jsonl = %s; want after_iteration 3, reward.weights.return 1→2 and train.iterations 3→4", raw)
	}
	// The configuration in force from iteration 4 is kept whole beside it;
	// a plain --resume uses it, and going back is a change too.
	after, err := os.ReadFile(filepath.Join(out, trainer.ConfigAfterFile(3)))
	if err != nil || !strings.Contains(string(after), "return = 2.0") || !strings.Contains(string(after), "iterations = 4") {
		t.Fatalf("%s: %v\n%s", trainer.ConfigAfterFile(3), err, after)
	}
	if code, _, stderr := troupe(t, "train", "--resume", out, "--no-eval"); code != exitOK {
		t.Fatalf("plain resume after accepted changes: exit %d: %s", code, stderr)
	}
	code, _, stderr = troupe(t, "train", "--resume", out, "--no-eval", "--set", "reward.weights.return=1")
	if code != exitUsage || !strings.Contains(stderr, "reward.weights.return: 2 → 1") {
		t.Fatalf("going back to the first weight: exit %d, stderr %q", code, stderr)
	}
}

// --resume of a directory that does not exist (a typo) says so in one
// line naming it, as bad usage, and creates nothing.
func TestResumeMissingRunDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "runs", "typo")
	code, _, stderr := troupe(t, "train", "--resume", dir)
	want := "troupe train: --resume " + dir + ": no such run directory"
	if code != exitUsage || !strings.HasPrefix(stderr, want) {
		t.Fatalf("exit %d, stderr %q: want exit %d and %q", code, stderr, exitUsage, want)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("--resume created %s: %v", dir, err)
	}
}
