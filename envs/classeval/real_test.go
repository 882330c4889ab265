package classeval

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/core/rollout"
)

// The env keeps the contract with the runtime on the shipped data, its
// baselines and truncation included.
func TestContract(t *testing.T) {
	if testing.Short() {
		t.Skip("plays episodes that run Python")
	}
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: Name, Params: map[string]any{"agents": 2, "pool": []any{"GPT-4", "ChatGPT", "Vicuna"}}})
	if err != nil {
		t.Fatal(err)
	}
	if spec := src.Spec(); spec.ReferenceBaseline != BaselineSingleAgent {
		t.Errorf("reference baseline %q, want %q", spec.ReferenceBaseline, BaselineSingleAgent)
	}
	envtest.Check(t, src)
}

// passReward scores an episode by its pass rate.
type passReward struct{}

func (passReward) Name() string         { return "test.pass" }
func (passReward) Components() []string { return []string{"quality"} }
func (passReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"quality": ep.Metrics[core.MetricPassRate]}, nil, nil
}

// An evaluation gives the same figures with one worker as with three, and
// with the sandbox memo cold as warm: durations come from the suite's
// shipped timings, not from this run's clock.
func TestSameResultsAcrossWorkers(t *testing.T) {
	if testing.Short() {
		t.Skip("plays episodes that run Python")
	}
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: Name})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	eval := func(workers int) rollout.EvalReport {
		s := rollout.Setup{Env: src, Rewards: []core.RewardFunc{passReward{}}, Weights: map[string]float64{"quality": 1},
			Rollout: rollout.Config{Workers: workers}, Seed: 3}
		rep, err := rollout.Evaluate(context.Background(), s, nil, rollout.Eval{Episodes: 6, Seed: 5, Policies: []string{"random", BaselineDepsEscalate}})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	a, b := eval(1), eval(3)
	if a.Backend != "replay" {
		t.Errorf("the evaluation's backend is %q, want \"replay\": recorded completions, replayed", a.Backend)
	}
	if !reflect.DeepEqual(a.Policies, b.Policies) {
		ja, _ := json.Marshal(a.Policies)
		jb, _ := json.Marshal(b.Policies)
		t.Errorf("1 worker:\n%s\n3 workers:\n%s", ja, jb)
	}
	if a.Policies["random"].MakespanS <= 0 {
		t.Errorf("no makespan: %+v", a.Policies["random"])
	}
}

// writeGz writes v as gzip JSON.
func writeGz(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := gzip.NewWriter(f)
	if err := json.NewEncoder(zw).Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readGz reads gzip JSON.
func readGz(t *testing.T, path string, v any) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(zr).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// A class whose code hangs (a busy loop) or kills the test process is
// scored, with what failed marked failed, and never fails the episode; the
// dataset and outputs_dir params load a user's own classes and
// completions.
func TestHangAndCrashAreScored(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python")
	}
	var all []map[string]any
	readGz(t, "internal/suite/data/ClassEval_data.json.gz", &all)
	var ds []map[string]any
	for _, c := range all {
		if c["task_id"] == "ClassEval_6" {
			ds = append(ds, c)
		}
	}
	if len(ds) != 1 {
		t.Fatal("ClassEval_6 (AvgPartition: setNum, get) not in the shipped data")
	}
	dir := t.TempDir()
	writeGz(t, filepath.Join(dir, "data.json.gz"), ds)
	out := filepath.Join(dir, "outputs")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	replies := []string{
		"```python\ndef setNum(self):\n    while True:\n        pass\n```",
		"```python\ndef get(self, index):\n    import os\n    os._exit(3)\n```",
	}
	writeGz(t, filepath.Join(out, "GPT-4_100_m_dire.json.gz"), []map[string]any{{"task_id": "ClassEval_6", "predict": []string{""}, "raw_output": replies}})
	e, err := New(map[string]any{"dataset": filepath.Join(dir, "data.json.gz"), "outputs_dir": out, "split": "all", "agents": 1, "pool": []any{"GPT-4"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{BaselineSingleAgent, BaselineParallelNaive} {
		r := play(t, e, 1, name)
		if r.Metrics[core.MetricPassRate] != 0 || r.Metrics[MetricClassPass] != 0 || r.Metrics[MetricMethods] != 2 {
			t.Errorf("%s: pass %v class %v methods %v, want 0, 0, 2", name, r.Metrics[core.MetricPassRate], r.Metrics[MetricClassPass], r.Metrics[MetricMethods])
		}
		if r.Metrics[core.MetricMakespan] <= 0 {
			t.Errorf("%s: makespan %v", name, r.Metrics[core.MetricMakespan])
		}
		t.Logf("%s: %s", name, r.Artifacts["results.json"])
	}
}
