package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestUsageErrorsNameWhatAndWhere checks that bad configuration and bad
// flags exit 2 with a message naming the file, line and key (or the flag).
func TestUsageErrorsNameWhatAndWhere(t *testing.T) {
	af := writeAgentfile(t, climbing)
	policies := writeAgentfile(t, climbing+"policies = [\"grpo\", \"nosuch\"]\n")
	reward := writeAgentfile(t, strings.Replace(climbing, "builtin:return", "builtin:nosuch", 1))
	weight := writeAgentfile(t, strings.Replace(climbing, "return = 1.0", "retrun = 1.0", 1))
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"override blamed on --set", []string{"train", "-f", af, "--set", "train.group_size=-2"}, "troupe: --set: train.group_size: must be at least 1, got -2"},
		{"unknown eval policy", []string{"train", "-f", policies, "--out", t.TempDir()}, "agentfile.toml:20: eval.policies: no policy \"nosuch\""},
		{"unknown reward", []string{"eval", "-f", reward}, "agentfile.toml:8: rewards.0: builtin:nosuch: no built-in reward \"nosuch\""},
		{"weight on no component", []string{"train", "-f", weight, "--out", t.TempDir()}, "agentfile.toml:11: reward.weights.retrun: no reward function returns a component \"retrun\" (components of the rewards: return)"},
		{"missing file", []string{"eval", "-f", filepath.Join(t.TempDir(), "none.toml")}, "none.toml: no such file or directory"},
		{"unknown baseline", []string{"run", "-f", af, "--baseline", "nosuch"}, "--baseline: no policy \"nosuch\" for env matrix (have random)"},
		{"grpo as a baseline", []string{"run", "-f", af, "--baseline", "grpo"}, "--baseline: policy \"grpo\" needs a trained policy"},
		{"zero episodes", []string{"eval", "-f", af, "--episodes", "0"}, "--episodes must be at least 1, got 0"},
		{"export arguments", []string{"export", "a", "b"}, "want one RUN_DIR"},
		{"export of no directory", []string{"export", filepath.Join(t.TempDir(), "typo")}, "typo: no such run directory"},
	}
	for _, c := range cases {
		code, _, stderr := troupe(t, c.args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", c.name, code, stderr, c.want)
		}
	}
	if code, _, _ := troupe(t, "export", "-h"); code != exitOK {
		t.Errorf("export -h: exit %d, want 0", code)
	}
}

// TestMaxRetriesZero checks that max_retries = 0 in the agentfile means
// one attempt per call, not the backend's default of five retries.
func TestMaxRetriesZero(t *testing.T) {
	var attempts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		attempts.Add(1)
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	af := writeAgentfile(t, openaiWriting(srv.URL))
	code, _, stderr := troupe(t, "run", "-f", af, "--baseline", "sop", "--set", "llm.default.max_retries=0")
	if code != exitRuntime {
		t.Fatalf("run against a failing server: exit %d, want 1: %s", code, stderr)
	}
	// At most one attempt per agent's call in the first step (4 writers).
	if n := attempts.Load(); n < 1 || n > 4 {
		t.Fatalf("%d attempts with max_retries = 0; want one per call", n)
	}
}

// TestResumeKeepsRelativePaths checks that a run's config.toml holds
// path params resolved against the agentfile's directory, so that
// --resume (which reads config.toml from the run directory) finds them.
func TestResumeKeepsRelativePaths(t *testing.T) {
	proj := t.TempDir()
	corpus, err := filepath.Abs("../../envs/writing/corpus")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(corpus, filepath.Join(proj, "rfcs")); err != nil {
		t.Skip(err)
	}
	text := strings.Replace(openaiWriting("http://unused"), `backend = "openai"`, `backend = "sim"`, 1)
	text = strings.Replace(text, "writers = 4", "writers = 4\ncorpus_dir = \"rfcs\"", 1)
	af := filepath.Join(proj, "agentfile.toml")
	if err := os.WriteFile(af, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	if code, _, stderr := troupe(t, "train", "--resume", out, "--no-eval", "--set", "train.iterations=2"); code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
}
