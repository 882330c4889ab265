package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func troupe(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = dispatch(context.Background(), args, &o, &e)
	return code, o.String(), e.String()
}

const climbing = `[project]
name = "climb"
seed = 1
[env]
source = "builtin:matrix"
[env.params]
game = "climbing"
[[rewards]]
source = "builtin:return"
[reward.weights]
return = 1.0
[train]
iterations = 3
tasks_per_iteration = 2
group_size = 4
[rollout]
workers = 2
[eval]
episodes = 3
`

func writeAgentfile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "agentfile.toml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBadConfigExits2(t *testing.T) {
	cases := []struct{ name, text, want string }{
		{"malformed", "[train\niterations = 3\n", "agentfile.toml:"},
		{"unknown key", strings.Replace(climbing, "workers = 2", "workers = 2\nwrkers = 3", 1), "rollout.wrkers: unknown key"},
		{"negative group", strings.Replace(climbing, "group_size = 4", "group_size = -4", 1), "agentfile.toml:15: train.group_size: must be at least 1, got -4"},
		{"unknown env", strings.Replace(climbing, "builtin:matrix", "builtin:nosuch", 1), "no built-in env \"nosuch\""},
		{"bad env param", strings.Replace(climbing, `game = "climbing"`, `game = "chess"`, 1), "chess"},
	}
	for _, c := range cases {
		code, _, stderr := troupe(t, "train", "-f", writeAgentfile(t, c.text), "--out", t.TempDir())
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", c.name, code, stderr, c.want)
		}
	}
	code, _, stderr := troupe(t, "train", "-f", writeAgentfile(t, climbing), "--set", "train.group_size=-2")
	if code != exitUsage || !strings.Contains(stderr, "train.group_size") {
		t.Errorf("--set validation: exit %d, %q", code, stderr)
	}
	if code, _, _ := troupe(t, "nosuch"); code != exitUsage {
		t.Errorf("unknown command: exit %d", code)
	}
	if code, _, _ := troupe(t, "train", "--nosuchflag"); code != exitUsage {
		t.Errorf("unknown flag: exit %d", code)
	}
}

func TestTrainEvalRun(t *testing.T) {
	af := writeAgentfile(t, climbing)
	out := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := troupe(t, "train", "-f", af, "--out", out)
	if code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	for _, f := range []string{"config.toml", "metrics.jsonl", "policy.safetensors", "checkpoint/state.json", "eval.json", "report.md", "curves.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("run directory lacks %s", f)
		}
	}
	if !strings.Contains(stdout, "grpo") || !strings.Contains(stdout, "random") {
		t.Errorf("train should end with the evaluation table, got %q", stdout)
	}
	code, stdout, stderr = troupe(t, "eval", "-f", af, "--policy", filepath.Join(out, "policy.safetensors"), "--episodes", "4", "--json")
	if code != exitOK {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	var rep struct {
		Env      string
		Episodes int
		Seed     uint64
		Policies map[string]struct {
			Reward         float64            `json:"reward"`
			Components     map[string]float64 `json:"components"`
			Metrics        map[string]float64 `json:"metrics"`
			MakespanS      *float64           `json:"makespan_s"`
			Speedup        *float64           `json:"speedup"`
			Tokens         *float64           `json:"tokens"`
			LLMCalls       *float64           `json:"llm_calls"`
			FailedEpisodes *int               `json:"failed_episodes"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("eval --json: %v: %q", err, stdout)
	}
	g, ok := rep.Policies["grpo"]
	if rep.Env != "matrix" || rep.Episodes != 4 || !ok || g.MakespanS == nil || g.FailedEpisodes == nil || g.Components["return"] == 0 {
		t.Fatalf("eval --json shape: %+v", rep)
	}
	runDir := t.TempDir()
	code, stdout, stderr = troupe(t, "run", "-f", af, "--policy", filepath.Join(out, "policy.safetensors"), "--seed", "3", "--out", runDir)
	if code != exitOK || !strings.Contains(stdout, "step   0") || !strings.Contains(stdout, "reward") {
		t.Fatalf("run: exit %d: %s %s", code, stdout, stderr)
	}
	// --resume on a finished run continues nothing and succeeds.
	if code, _, stderr := troupe(t, "train", "--resume", out, "--no-eval"); code != exitOK {
		t.Fatalf("resume: exit %d: %s", code, stderr)
	}
}
