package trainer

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
