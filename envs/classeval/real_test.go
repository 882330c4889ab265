package classeval

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/envs/classeval/internal/suite"
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

// shippedTasks returns the shipped dataset's tasks with these ids, as JSON
// objects in the dataset's order, to write a user's dataset from.
func shippedTasks(t *testing.T, ids ...string) []map[string]any {
	t.Helper()
	var all, out []map[string]any
	readGz(t, "internal/suite/data/ClassEval_data.json.gz", &all)
	for _, c := range all {
		if id, _ := c["task_id"].(string); slices.Contains(ids, id) {
			out = append(out, c)
		}
	}
	if len(out) != len(ids) {
		t.Fatalf("%d of the tasks %v in the shipped data", len(out), ids)
	}
	return out
}

// A class whose code hangs (a busy loop) or kills the test process is
// scored, with what failed marked failed, and never fails the episode; the
// dataset and outputs_dir params load a user's own classes and
// completions.
func TestHangAndCrashAreScored(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python")
	}
	ds := shippedTasks(t, "ClassEval_6") // AvgPartition: setNum, get
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

// A user's dataset is checked before it is played: a class whose canonical
// solution fails its own tests is refused, naming the method; the shipped
// classes with a user's outputs directory keep the shipped exclusions.
func TestUserDatasetCanonicalChecked(t *testing.T) {
	if testing.Short() {
		t.Skip("runs Python")
	}
	ds := shippedTasks(t, "ClassEval_2", "ClassEval_6")
	// ClassEval_6's get returns the wrong part.
	for _, m := range ds[1]["methods_info"].([]any) {
		m := m.(map[string]any)
		if m["method_name"] == "get" {
			m["solution_code"] = "def get(self, index):\n    return self.lst[:1]"
		}
	}
	dir := t.TempDir()
	writeGz(t, filepath.Join(dir, "data.json.gz"), ds)
	out := filepath.Join(dir, "outputs")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	writeGz(t, filepath.Join(out, "GPT-4_100_m_dire.json.gz"), []map[string]any{
		{"task_id": "ClassEval_2", "predict": []string{""}, "raw_output": []string{"x"}},
		{"task_id": "ClassEval_6", "predict": []string{""}, "raw_output": []string{"x", "y"}},
	})
	params := map[string]any{"dataset": filepath.Join(dir, "data.json.gz"), "outputs_dir": out, "split": "all", "agents": 1, "pool": []any{"GPT-4"}}
	_, err := New(params)
	if err == nil || !strings.Contains(err.Error(), "1 of the 2 classes") || !strings.Contains(err.Error(), "ClassEval_6 (fails get: ") || !strings.Contains(err.Error(), `env.params.classes=["ClassEval_2"]`) {
		t.Fatalf("New with a failing canonical solution: %v", err)
	}
	params["classes"] = []any{"ClassEval_2"}
	if _, err := New(params); err != nil {
		t.Fatalf("New without it: %v", err)
	}

	e, err := New(map[string]any{"outputs_dir": "internal/suite/data/outputs"})
	if err != nil {
		t.Fatal(err)
	}
	ex, err := suite.EmbeddedExclusions()
	if err != nil || len(ex) == 0 {
		t.Fatalf("exclusions %v, %v", ex, err)
	}
	for _, x := range ex {
		if slices.Contains(e.Spec().TaskNames, x.Class) {
			t.Errorf("the shipped classes with outputs_dir: %s, excluded (%s), is played", x.Class, x.Reason)
		}
	}
}
