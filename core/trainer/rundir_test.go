package trainer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/internal/testenv"
)

// A fresh run into a directory that holds an earlier run's LLM samples
// starts a new file: the old run's samples must not be exported as this
// run's.
func TestFreshRunReplacesLLMSamples(t *testing.T) {
	out := t.TempDir()
	samples := filepath.Join(out, LLMSamplesFile)
	if err := os.WriteFile(samples, []byte(`{"iteration":1,"sample":{"completion":"old run"}}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := toySetup(1)
	s.Train.Iterations = 1
	if err := train(t, s, out, false, context.Background()); err != nil {
		t.Fatal(err)
	}
	// The toy team uses the sim LLM, which records nothing.
	if _, err := os.Stat(samples); !os.IsNotExist(err) {
		t.Fatalf("the earlier run's %s survived a fresh run (stat: %v)", LLMSamplesFile, err)
	}
}

// Resuming drops the samples of iterations after the checkpoint (recorded
// before a crash); those iterations run again and record their own.
func TestResumeTruncatesLLMSamples(t *testing.T) {
	out := t.TempDir()
	s := toySetup(1)
	s.Train.Iterations = 2 // checkpoint at iteration 2
	if err := train(t, s, out, false, context.Background()); err != nil {
		t.Fatal(err)
	}
	samples := filepath.Join(out, LLMSamplesFile)
	var lines []string
	for it := 1; it <= 4; it++ {
		lines = append(lines, fmt.Sprintf(`{"iteration":%d,"sample":{"completion":"it%d"}}`, it, it))
	}
	if err := os.WriteFile(samples, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Train.Iterations = 3
	if err := train(t, s, out, true, context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLLMSamples(out, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Completion != "it1" || got[1].Completion != "it2" {
		t.Fatalf("after resuming from iteration 2 the samples are %+v; want those of iterations 1 and 2", got)
	}
}

// A statistic JSON cannot hold is an error naming it, not a blank line in
// metrics.jsonl.
func TestNonFiniteMetricIsAnError(t *testing.T) {
	out := t.TempDir()
	s := toySetup(1)
	s.Train.Iterations = 1
	s.Env = toySource{mk: func() *toyEnv { e := newToy(); e.nanMetric = true; return e }}
	err := train(t, s, out, false, context.Background())
	if err == nil || !strings.Contains(err.Error(), "metrics.wobble = NaN") {
		raw, _ := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
		t.Fatalf("err = %v, want one naming metrics.wobble; metrics.jsonl:\n%q", err, raw)
	}
}

// The files the runtime writes atomically get the same mode as the rest
// of the run directory.
func TestRunDirectoryFileModes(t *testing.T) {
	out := t.TempDir()
	s := toySetup(1)
	s.Train.Iterations = 2
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background(), RunOptions{Out: out, Config: []byte("[project]\n")}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"config.toml", "metrics.jsonl", "policy.safetensors", filepath.Join("checkpoint", "state.json")} {
		fi, err := os.Stat(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		if m := fi.Mode().Perm(); m != 0o644 {
			t.Errorf("%s has mode %v, want 0644", name, m)
		}
	}
}

// A run directory has one owner: a second OpenRunDir fails naming the
// directory and the holder's pid until the first is closed.
func TestRunDirLock(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	first, err := OpenRunDir(dir, FreshRun)
	if err != nil {
		t.Fatal(err)
	}
	if !first.Created {
		t.Error("OpenRunDir created the directory but says it did not")
	}
	for _, mode := range []RunDirMode{FreshRun, ResumeRun, ForceFreshRun} {
		_, err := OpenRunDir(dir, mode)
		var busy *BusyError
		if !errors.As(err, &busy) || busy.PID != os.Getpid() || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), fmt.Sprint(os.Getpid())) {
			t.Fatalf("mode %d while held: err = %v; want a BusyError naming %s and pid %d", mode, err, dir, os.Getpid())
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := OpenRunDir(dir, ResumeRun)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	again.Close()
}

// A fresh run refuses a directory holding files; ForceFreshRun moves
// them, whole, to a new sibling and starts empty; an empty existing
// directory is accepted as is.
func TestFreshRunDirRefusesEarlierRun(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "run")
	if err := os.MkdirAll(filepath.Join(dir, "checkpoint"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "metrics.jsonl"), []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := OpenRunDir(dir, FreshRun)
	var ne *NotEmptyError
	if !errors.As(err, &ne) || !strings.Contains(err.Error(), "metrics.jsonl") || !strings.Contains(err.Error(), "--resume "+dir) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("err = %v; want a NotEmptyError naming metrics.jsonl, --resume and --force", err)
	}
	rd, err := OpenRunDir(dir, ForceFreshRun)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	if !strings.HasPrefix(rd.MovedAside, dir+".replaced-") {
		t.Fatalf("MovedAside = %q", rd.MovedAside)
	}
	if b, err := os.ReadFile(filepath.Join(rd.MovedAside, "metrics.jsonl")); err != nil || string(b) != "{}\n" {
		t.Fatalf("the earlier run's metrics.jsonl was not kept in %s: %q, %v", rd.MovedAside, b, err)
	}
	if files, _ := runFiles(dir); len(files) != 0 {
		t.Fatalf("after --force the directory holds %v", files)
	}
	empty := filepath.Join(parent, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	e, err := OpenRunDir(empty, FreshRun)
	if err != nil {
		t.Fatalf("an empty directory: %v", err)
	}
	if e.Created {
		t.Error("Created is true for a directory that existed")
	}
	e.Close()
	if _, err := OpenRunDir(filepath.Join(parent, "missing"), ResumeRun); err == nil {
		t.Error("resuming a missing directory succeeded")
	}
}

// Default directory names never collide, even within one millisecond and
// from concurrent callers.
func TestMakeUniqueDir(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "runs", "proj")
	now := time.Date(2026, 12, 2, 17, 0, 0, 123e6, time.UTC)
	const n = 20
	names := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { names[i], errs[i] = MakeUniqueDir(prefix, now) })
	}
	wg.Wait()
	seen := map[string]bool{}
	for i, name := range names {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if seen[name] {
			t.Fatalf("%s returned twice", name)
		}
		seen[name] = true
		if !strings.HasPrefix(filepath.Base(name), "proj-20261202-170000.123") {
			t.Errorf("name %s lacks the millisecond time", name)
		}
	}
}

// Ctrl-C before the first iteration ends saves the iteration-0
// checkpoint: --resume then works and ends where an uninterrupted run
// ends.
func TestInterruptBeforeFirstIteration(t *testing.T) {
	full := t.TempDir()
	s := toySetup(1)
	s.Train.Iterations = 2
	if err := train(t, s, full, false, context.Background()); err != nil {
		t.Fatal(err)
	}
	part := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := train(t, s, part, false, ctx); err != ErrInterrupted {
		t.Fatalf("err = %v, want ErrInterrupted", err)
	}
	raw, err := os.ReadFile(filepath.Join(part, "checkpoint", "state.json"))
	if err != nil {
		t.Fatalf("no checkpoint after an interruption before iteration 1: %v", err)
	}
	var st checkpointState
	if err := json.Unmarshal(raw, &st); err != nil || st.Iteration != 0 {
		t.Fatalf("checkpoint %s: %v", raw, err)
	}
	if err := train(t, s, part, true, context.Background()); err != nil {
		t.Fatalf("resume from the iteration-0 checkpoint: %v", err)
	}
	a, b := testenv.MetricsWithoutTiming(t, filepath.Join(full, "metrics.jsonl")), testenv.MetricsWithoutTiming(t, filepath.Join(part, "metrics.jsonl"))
	if len(a) != 2 || strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Fatalf("resumed metrics differ:\n%s\n---\n%s", strings.Join(a, "\n"), strings.Join(b, "\n"))
	}
	p1, _ := os.ReadFile(filepath.Join(full, "policy.safetensors"))
	p2, _ := os.ReadFile(filepath.Join(part, "policy.safetensors"))
	if len(p1) == 0 || !bytes.Equal(p1, p2) {
		t.Fatal("the policy resumed from iteration 0 differs from the uninterrupted one")
	}
}

// A resumed run with changed settings appends them, with the iteration
// they apply after, to changes.jsonl; config.toml is left as it was.
func TestResumeRecordsChanges(t *testing.T) {
	out := t.TempDir()
	s := toySetup(1)
	s.Train.Iterations = 2
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), RunOptions{Out: out, Config: []byte("# first\n")}); err != nil {
		t.Fatal(err)
	}
	tr.Close()
	s.Train.Iterations = 3
	changes := []ConfigChange{{Key: "train.learning_rate", Old: 0.01, New: 0.02}}
	for _, iters := range []int{3, 4} {
		s.Train.Iterations = iters
		tr, err := New(s.Setup, s.Train)
		if err != nil {
			t.Fatal(err)
		}
		if err := tr.Run(context.Background(), RunOptions{Out: out, Resume: true, Changes: changes}); err != nil {
			t.Fatal(err)
		}
		tr.Close()
	}
	if b, _ := os.ReadFile(filepath.Join(out, "config.toml")); string(b) != "# first\n" {
		t.Errorf("config.toml = %q, want the first run's", b)
	}
	raw, err := os.ReadFile(filepath.Join(out, ChangesFile))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 {
		t.Fatalf("%s has %d lines, want 2:\n%s", ChangesFile, len(lines), raw)
	}
	for i, want := range []int{2, 3} {
		var c ConfigChanges
		if err := json.Unmarshal([]byte(lines[i]), &c); err != nil {
			t.Fatal(err)
		}
		if c.AfterIteration != want || len(c.Changes) != 1 || c.Changes[0].Key != "train.learning_rate" || c.Changes[0].New != 0.02 || c.Time == "" {
			t.Errorf("line %d = %s; want after_iteration %d and the change", i+1, lines[i], want)
		}
	}
}
