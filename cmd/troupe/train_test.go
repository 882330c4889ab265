package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
	"github.com/troupe-dev/troupe/envs/matrix"
)

// liveEnvs counts the test.livematrix envs open at once.
var liveEnvs struct {
	sync.Mutex
	now, max int
}

// liveMatrix is the matrix env, counted while open.
type liveMatrix struct{ *matrix.Env }

func (e liveMatrix) Close() error {
	liveEnvs.Lock()
	liveEnvs.now--
	liveEnvs.Unlock()
	return e.Env.Close()
}

func init() {
	core.RegisterEnv("test.livematrix", func(params map[string]any) (core.Env, error) {
		e, err := matrix.New(params)
		if err != nil {
			return nil, err
		}
		liveEnvs.Lock()
		liveEnvs.now++
		liveEnvs.max = max(liveEnvs.max, liveEnvs.now)
		liveEnvs.Unlock()
		return liveMatrix{e}, nil
	})
}

// troupe train with W workers has at most W envs open at a time (W
// processes of a go-plugin env): the source's load-time env is the first
// worker's, and the trainer's workers end before the evaluation opens its
// own; all are closed at the end.
func TestTrainOpensWorkersEnvsAtATime(t *testing.T) {
	liveEnvs.Lock()
	liveEnvs.now, liveEnvs.max = 0, 0
	liveEnvs.Unlock()
	af := writeAgentfile(t, strings.Replace(climbing, "builtin:matrix", "builtin:test.livematrix", 1))
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", filepath.Join(t.TempDir(), "run")); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	liveEnvs.Lock()
	defer liveEnvs.Unlock()
	if liveEnvs.max != 2 || liveEnvs.now != 0 {
		t.Fatalf("with 2 workers, %d envs were open at once and %d are left open; want 2 and 0", liveEnvs.max, liveEnvs.now)
	}
}

// troupe run says when its LLM is the simulated one, as train does.
func TestRunLabelsSimulatedLLM(t *testing.T) {
	code, stdout, stderr := troupe(t, "run", "-f", filepath.Join("..", "..", "agentfile.toml"), "--baseline", "sop")
	const want = ", LLM sim (simulated LLM: results are simulations)\n"
	if code != exitOK || !strings.Contains(stdout, want) {
		t.Fatalf("run: exit %d, stdout %q, stderr %q; want a line ending %q", code, stdout, stderr, want)
	}
}

// A run directory is owned by one run: a second troupe train into a held
// directory exits 2 naming it and the holder's pid; a finished run's
// directory is refused unless --resume or --force, and --force keeps the
// earlier run, moved aside.
func TestTrainRunDirectoryOwnership(t *testing.T) {
	af := writeAgentfile(t, climbing)
	out := filepath.Join(t.TempDir(), "run")
	held, err := trainer.OpenRunDir(out, trainer.FreshRun)
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval")
	if code != exitUsage || !strings.Contains(stderr, "run directory "+out+" is in use by process "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("train into a held directory: exit %d, stderr %q; want 2 naming the directory and pid", code, stderr)
	}
	held.Close()
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	first, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	code, _, stderr = troupe(t, "train", "-f", af, "--out", out, "--no-eval")
	if code != exitUsage || !strings.Contains(stderr, "run directory "+out+" is not empty") || !strings.Contains(stderr, "--force") {
		t.Fatalf("train into a finished run: exit %d, stderr %q; want 2 and the way out", code, stderr)
	}
	if now, _ := os.ReadFile(filepath.Join(out, "metrics.jsonl")); !bytes.Equal(now, first) {
		t.Fatal("the refused run changed the earlier run's metrics.jsonl")
	}
	code, _, stderr = troupe(t, "train", "-f", af, "--out", out, "--no-eval", "--force")
	if code != exitOK || !strings.Contains(stderr, "--force: moved the earlier content of "+out+" to "+out+".replaced-") {
		t.Fatalf("--force: exit %d, stderr %q", code, stderr)
	}
	aside, _ := filepath.Glob(out + ".replaced-*")
	if len(aside) != 1 {
		t.Fatalf("moved-aside directories: %v", aside)
	}
	if kept, _ := os.ReadFile(filepath.Join(aside[0], "metrics.jsonl")); !bytes.Equal(kept, first) {
		t.Fatal("--force lost the earlier run's metrics.jsonl")
	}
	for _, args := range [][]string{
		{"--resume", out, "--force"},
		{"--force"},
		{"--accept-changes"},
		{"--resume", out, "--out", out + "2"},
	} {
		if code, _, stderr := troupe(t, append([]string{"train", "-f", af}, args...)...); code != exitUsage {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
}

// Default run directories are new directories, distinct even for runs
// started within one second; a run that cannot start leaves none behind.
func TestTrainDefaultRunDirectories(t *testing.T) {
	af := writeAgentfile(t, strings.Replace(climbing, "iterations = 3", "iterations = 1", 1))
	t.Chdir(t.TempDir())
	for range 2 {
		if code, _, stderr := troupe(t, "train", "-f", af, "--no-eval"); code != exitOK {
			t.Fatalf("train: exit %d: %s", code, stderr)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join("runs", "climb-*"))
	if len(dirs) != 2 {
		t.Fatalf("two runs made run directories %v; want 2", dirs)
	}
	if code, _, _ := troupe(t, "train", "-f", af, "--set", "train.learning_rate=-1"); code != exitUsage {
		t.Fatalf("a bad setting: exit %d, want 2", code)
	}
	bad := writeAgentfile(t, strings.Replace(climbing, `game = "climbing"`, `game = "chess"`, 1))
	if code, _, _ := troupe(t, "train", "-f", bad); code != exitUsage {
		t.Fatalf("a bad env param: exit %d, want 2", code)
	}
	if now, _ := filepath.Glob(filepath.Join("runs", "climb-*")); len(now) != 2 {
		t.Fatalf("runs that could not start left directories: %v", now)
	}
}

// cancelOn is a writer that cancels a context when a text is written to
// it: the tests' Ctrl-C at a given point of a command.
type cancelOn struct {
	bytes.Buffer
	text   string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.text) {
		c.cancel()
	}
	return c.Buffer.Write(p)
}

// Ctrl-C before the first iteration says the checkpoint holds the initial
// policy, and the command it prints works; Ctrl-C during the final
// evaluation still writes the report, saying the evaluation was
// interrupted and how to run it.
func TestTrainInterruptMessagesAreTrue(t *testing.T) {
	af := writeAgentfile(t, climbing)
	out := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	if code := dispatch(ctx, []string{"train", "-f", af, "--out", out}, &o, &e); code != exitRuntime {
		t.Fatalf("train under a cancelled context: exit %d: %s", code, e.String())
	}
	want := "troupe: interrupted before the first iteration ended (the checkpoint holds the initial policy); the checkpoint is saved. Continue with:\n  troupe train --resume " + out + "\n"
	if !strings.Contains(e.String(), want) {
		t.Fatalf("stderr %q lacks %q", e.String(), want)
	}
	if code, _, stderr := troupe(t, "train", "--resume", out, "--no-eval"); code != exitOK {
		t.Fatalf("the printed command failed: exit %d: %s", code, stderr)
	}

	out2 := filepath.Join(t.TempDir(), "run")
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	stderr := &cancelOn{text: "troupe: evaluating on", cancel: cancel}
	var stdout bytes.Buffer
	code := dispatch(ctx, []string{"train", "-f", af, "--out", out2}, &stdout, stderr)
	if code != exitRuntime {
		t.Fatalf("Ctrl-C during the evaluation: exit %d: %s", code, stderr.String())
	}
	evalCmd := "troupe eval -f " + filepath.Join(out2, "config.toml") + " --policy " + filepath.Join(out2, "policy.safetensors")
	if !strings.Contains(stderr.String(), "evaluation interrupted") || !strings.Contains(stderr.String(), evalCmd) {
		t.Fatalf("stderr %q does not say the evaluation was interrupted and how to run it", stderr.String())
	}
	rep, err := os.ReadFile(filepath.Join(out2, "report.md"))
	if err != nil {
		t.Fatalf("no report after an interrupted evaluation: %v", err)
	}
	if !strings.Contains(string(rep), "Training: 3 iterations") || !strings.Contains(string(rep), "evaluation was interrupted") || !strings.Contains(string(rep), evalCmd) {
		t.Fatalf("report.md:\n%s", rep)
	}
	if code, stdout, stderr := troupe(t, "eval", "-f", filepath.Join(out2, "config.toml"), "--policy", filepath.Join(out2, "policy.safetensors"), "--episodes", "1"); code != exitOK || !strings.Contains(stdout, "grpo") {
		t.Fatalf("the printed eval command: exit %d: %s %s", code, stdout, stderr)
	}
}

// troupe eval shows a line per policy played and, on Ctrl-C, says how far
// it got and why nothing is printed.
func TestEvalProgressAndInterrupt(t *testing.T) {
	af := writeAgentfile(t, climbing)
	out := filepath.Join(t.TempDir(), "run")
	if code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval"); code != exitOK {
		t.Fatalf("train: exit %d: %s", code, stderr)
	}
	args := []string{"eval", "-f", af, "--policy", filepath.Join(out, "policy.safetensors"), "--episodes", "4"}
	code, stdout, stderr := troupe(t, args...)
	if code != exitOK || !strings.Contains(stdout, "random") {
		t.Fatalf("eval: exit %d: %s %s", code, stdout, stderr)
	}
	for _, want := range []string{"eval 1/2 policies (grpo done)", "eval 2/2 policies (random done)"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks the progress line %q", stderr, want)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := &cancelOn{text: "eval 1/2 policies", cancel: cancel}
	var o bytes.Buffer
	if code := dispatch(ctx, args, &o, e); code != exitRuntime {
		t.Fatalf("eval interrupted after the first policy: exit %d: %s", code, e.String())
	}
	want := "troupe eval: interrupted: 1 of 2 policies played their 4 episodes; nothing is printed"
	if !strings.Contains(e.String(), want) || o.Len() != 0 {
		t.Errorf("stderr %q lacks %q, or stdout is not empty: %q", e.String(), want, o.String())
	}
}

// On a terminal the evaluation's live line follows the episodes of the
// policy being played (at most ten redraws a second) and keeps each
// policy's end; in a log only the policies' ends are written.
func TestEvalProgressLiveLine(t *testing.T) {
	for _, tty := range []bool{true, false} {
		var b bytes.Buffer
		p := newProgress(&b, 0)
		p.tty = tty
		ctx, step := p.evalProgress(context.Background(), 4)
		episodeDone := rollout.EpisodeDoneFunc(ctx)
		step("", 0, 2)
		episodeDone() // drawn: the first
		episodeDone() // not drawn: within 100 ms of it
		live := "\r\033[Keval 0/2 policies, the next at 1/4 episodes"
		if got := strings.Count(b.String(), "\r\033[K"); tty && (!strings.HasPrefix(b.String(), live) || got != 1) {
			t.Errorf("terminal: %q, want one redraw starting %q", b.String(), live)
		}
		episodeDone()
		episodeDone()
		step("grpo", 1, 2)
		if !strings.Contains(b.String(), "eval 1/2 policies (grpo done)") {
			t.Errorf("tty %v: %q lacks the policy's end", tty, b.String())
		}
		if !tty && (strings.Contains(b.String(), "episodes") || strings.Count(b.String(), "\n") != 1) {
			t.Errorf("log: %q, want only the policy's line", b.String())
		}
	}
}
