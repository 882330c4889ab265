package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/internal/testenv"
)

// troupe eval --json carries every mean's 95 % interval, the best
// baseline and grpo's paired differences; the table shows them; a trained
// run's report.md compares grpo with the best baseline.
func TestEvalJSONIntervalsAndPaired(t *testing.T) {
	af := writeAgentfile(t, climbing)
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--set", "train.iterations=1"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	pol := filepath.Join(out, "policy.safetensors")
	code, stdout, stderr := troupe(t, "eval", "-f", af, "--policy", pol, "--episodes", "6", "--json")
	if code != exitOK {
		t.Fatalf("eval: exit %d: %s", code, stderr)
	}
	type iv struct{ Lo, Hi *float64 }
	var rep struct {
		Policies map[string]struct {
			Reward      float64  `json:"reward"`
			FailedShare *float64 `json:"failed_share"`
			CI95        *struct {
				Reward     iv            `json:"reward"`
				Components map[string]iv `json:"components"`
				MakespanS  iv            `json:"makespan_s"`
			} `json:"ci95"`
		}
		BestBaseline string `json:"best_baseline"`
		Paired       map[string]struct {
			Pairs  int `json:"pairs"`
			Reward struct {
				Mean *float64 `json:"mean"`
				CI95 iv       `json:"ci95"`
			} `json:"reward"`
		} `json:"paired"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("eval --json: %v: %q", err, stdout)
	}
	for name, p := range rep.Policies {
		if p.CI95 == nil || p.CI95.Reward.Lo == nil || p.CI95.Reward.Hi == nil || *p.CI95.Reward.Lo > p.Reward || *p.CI95.Reward.Hi < p.Reward || p.FailedShare == nil {
			t.Errorf("policy %s: reward %v with interval %+v and failed share %v; want an interval around the mean", name, p.Reward, p.CI95, p.FailedShare)
		}
	}
	if _, ok := rep.Policies[rep.BestBaseline]; !ok || rep.BestBaseline == "grpo" {
		t.Errorf("best baseline %q", rep.BestBaseline)
	}
	if len(rep.Paired) != len(rep.Policies)-1 {
		t.Errorf("paired against %d policies, want the %d others", len(rep.Paired), len(rep.Policies)-1)
	}
	for name, d := range rep.Paired {
		if d.Pairs != 6 || d.Reward.Mean == nil || d.Reward.CI95.Lo == nil {
			t.Errorf("grpo − %s: %+v", name, d)
		}
	}
	code, stdout, _ = troupe(t, "eval", "-f", af, "--policy", pol, "--episodes", "6")
	if code != exitOK || !strings.Contains(stdout, " ±") || !strings.Contains(stdout, rep.BestBaseline+"*") || !strings.Contains(stdout, "grpo − "+rep.BestBaseline+"*") {
		t.Errorf("eval table lacks intervals, the best-baseline mark or the paired rows:\n%s", stdout)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(md), "**grpo − ") || !strings.Contains(string(md), " ±") {
		t.Errorf("report.md does not compare grpo with the best baseline: %v\n%s", err, md)
	}
}

// troupe eval --by-task prints grpo's paired difference on each task
// instance (here each RFC, by name), the JSON always carries it and
// scripts/eval-table.py formats it, and an evaluation without a trained
// policy gets a reason instead of a table.
func TestEvalByTask(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	small := []string{"--set", "train.iterations=1", "--set", "train.tasks_per_iteration=2", "--set", "train.group_size=2"}
	if code, _, stderr := troupe(t, append([]string{"train", "-f", "../../agentfile.toml", "--out", out, "--no-eval"}, small...)...); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	args := []string{"eval", "-f", "../../agentfile.toml", "--policy", filepath.Join(out, "policy.safetensors"), "--episodes", "6",
		"--set", `eval.policies=["grpo","read_once_paced"]`}
	code, stdout, stderr := troupe(t, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("eval --json: exit %d: %s", code, stderr)
	}
	var rep struct {
		Paired map[string]struct {
			ByTask []struct {
				Task  int    `json:"task"`
				Name  string `json:"name"`
				Pairs int    `json:"pairs"`
			} `json:"by_task"`
		} `json:"paired"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	rows, seeds := rep.Paired["read_once_paced"].ByTask, 0
	for _, r := range rows {
		seeds += r.Pairs
		if !strings.Contains(r.Name, "-") { // an RFC's file name, "2582-raw-reference-mir-operator"
			t.Errorf("instance %d named %q, want its RFC", r.Task, r.Name)
		}
	}
	if len(rows) == 0 || seeds != 6 {
		t.Fatalf("by_task %+v: want the 6 seeds spread over the RFCs they played", rows)
	}
	js := stdout
	code, stdout, stderr = troupe(t, append(args, "--by-task")...)
	if code != exitOK || !strings.Contains(stdout, "joint reward by task instance") || !strings.Contains(stdout, rows[0].Name) {
		t.Fatalf("eval --by-task: exit %d, no per-RFC table naming %s:\n%s\n%s", code, rows[0].Name, stdout, stderr)
	}
	af := writeAgentfile(t, climbing)
	code, stdout, stderr = troupe(t, "eval", "-f", af, "--episodes", "2", "--by-task")
	if code != exitOK || strings.Contains(stdout, "by task instance") || !strings.Contains(stderr, "--by-task: no table: it compares the trained policy") {
		t.Fatalf("eval --by-task without a policy: exit %d\n%s\n%s", code, stdout, stderr)
	}
	// scripts/eval-table.py formats the same JSON for BENCHMARKS.md.
	testenv.Need(t, testenv.PythonInstalled())
	f := filepath.Join(t.TempDir(), "eval.json")
	if err := os.WriteFile(f, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	md, err := exec.Command(testenv.Python, "../../scripts/eval-table.py", f, "--by-task", "consistency").CombinedOutput()
	if err != nil || !strings.Contains(string(md), "| task | seeds | grpo − read_once_paced* |") || !strings.Contains(string(md), "| "+rows[0].Name+" | ") ||
		!strings.Contains(string(md), "| grpo − | joint reward | joint reward, by task (") {
		t.Fatalf("eval-table.py --by-task: %v\n%s", err, md)
	}
}
