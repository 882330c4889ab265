package main

import (
	"context"
	"encoding/json"
	"fmt"
	"go/format"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/testenv"
	"github.com/troupe-dev/troupe/plugins/wasm"
)

// Every scaffold builds as generated, loads in the Wasm host and works
// (its env draws its task from the seed and refuses decisions out of
// range and bad params; its reward declares the metrics it needs); troupe
// inspect describes it, and the agentfile written beside it trains.
func TestNewScaffoldsBuildAndLoad(t *testing.T) {
	testenv.Need(t, testenv.Clang()) // for the C scaffolds
	base := t.TempDir()
	t.Setenv(wasm.CacheDirEnv, filepath.Join(base, "cache"))
	type scaf struct{ kind, lang, name, dir string }
	var all []scaf
	for _, kind := range []string{"env", "reward"} {
		for _, lang := range []string{"go", "c"} {
			name := "my_" + kind + "_" + lang
			all = append(all, scaf{kind, lang, name, filepath.Join(base, name)})
		}
	}
	for _, s := range all {
		code, out, errOut := troupe(t, "new", s.kind, s.name, "--lang", s.lang, "--dir", s.dir)
		if code != 0 {
			t.Fatalf("new %s %s: exit %d: %s", s.kind, s.lang, code, errOut)
		}
		if !strings.Contains(out, "build.sh") {
			t.Errorf("new: output %q", out)
		}
	}
	// Build all four at once.
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, s := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("sh", filepath.Join(s.dir, "build.sh"))
			cmd.Env = append(os.Environ(), "GOFLAGS=", "GOWORK=off")
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = &buildError{s.name, err, string(out)}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	for _, s := range all {
		path := filepath.Join(s.dir, s.name+".wasm")
		code, out, errOut := troupe(t, "inspect", path, "--json")
		if code != 0 {
			t.Fatalf("inspect %s: exit %d: %s", s.name, code, errOut)
		}
		var info wasm.Info
		if err := json.Unmarshal([]byte(out), &info); err != nil || info.ABIVersion != 1 {
			t.Fatalf("inspect %s: %v\n%s", s.name, err, out)
		}
		ref := core.SourceRef{Scheme: "wasm", Path: path}
		if s.kind == "reward" {
			if info.Reward == nil || info.Reward.Name != s.name {
				t.Fatalf("inspect %s: reward %+v", s.name, info.Reward)
			}
			r, err := core.LoadReward(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			c, _, err := r.Score(&core.Episode{Metrics: map[string]float64{"makespan_s": 4, "reference_makespan_s": 6}})
			if err != nil || c["speed"] != 1.5 {
				t.Fatalf("%s: score %v %v", s.name, c, err)
			}
			if got := core.RequiredMetricsOf(r); !slices.Equal(got, []string{core.MetricMakespan, core.MetricReferenceMakespan}) {
				t.Errorf("%s: required metrics %v", s.name, got)
			}
			if _, _, err := r.Score(&core.Episode{Metrics: map[string]float64{"makespan_s": 4}}); err == nil {
				t.Errorf("%s: scored an episode without reference_makespan_s", s.name)
			}
			if _, err := core.LoadReward(ctx, core.SourceRef{Scheme: "wasm", Path: path, Params: map[string]any{"x": 1}}); err == nil || !strings.Contains(err.Error(), `unknown key "x"`) {
				t.Errorf("%s: params {x: 1}: %v", s.name, err)
			}
			continue
		}
		for _, c := range []struct {
			params map[string]any
			want   string
		}{
			{map[string]any{"wrok": 4}, `unknown key "wrok"`},
			{map[string]any{"work": "many"}, `key "work": want int, got string`},
			{map[string]any{"work": 0}, `"work": want 1..1000`},
		} {
			if _, err := core.LoadEnv(ctx, core.SourceRef{Scheme: "wasm", Path: path, Params: c.params}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: params %v: %v, want an error containing %q", s.name, c.params, err, c.want)
			}
		}
		if info.Env == nil || info.Env.Name != s.name {
			t.Fatalf("inspect %s: env %+v", s.name, info.Env)
		}
		src, err := core.LoadEnv(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		env, err := src.Open()
		if err != nil {
			t.Fatal(err)
		}
		// The seed draws 3 to 6 units of work; two agents working do two
		// a step.
		units := map[float64]bool{}
		for seed := uint64(1); seed <= 20; seed++ {
			if _, err := env.Reset(seed); err != nil {
				t.Fatal(err)
			}
			ret := 0.0
			for {
				res, err := env.Step([]core.Action{{Decision: 1}, {Decision: 1}})
				if err != nil {
					t.Fatalf("%s: step: %v", s.name, err)
				}
				ret += res.Rewards[0] + res.Rewards[1]
				if res.Done() {
					ref := res.Metrics["reference_makespan_s"]
					units[ref] = true
					if !res.Terminated || ref < 3 || ref > 6 || res.Metrics["makespan_s"] != math.Ceil(ref/2) || math.Abs(ret-1) > 1e-9 {
						t.Fatalf("%s: seed %d: final step %+v, return %v", s.name, seed, res, ret)
					}
					break
				}
			}
		}
		if len(units) < 3 {
			t.Errorf("%s: 20 seeds gave %d task sizes %v: the env does not use its seed", s.name, len(units), units)
		}
		if _, err := env.Reset(1); err != nil {
			t.Fatal(err)
		}
		for _, d := range []int{2, -1} {
			if _, err := env.Step([]core.Action{{Decision: 0}, {Decision: d}}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("agent 1: decision %d is not one of 0..1", d)) {
				t.Errorf("%s: decision %d: %v", s.name, d, err)
			}
		}
		env.Close()
		src.Close()
	}
	// The agentfile written beside each scaffold trains with it.
	for _, s := range all {
		out := filepath.Join(base, "run-"+s.name)
		code, _, errOut := troupe(t, "train", "-f", filepath.Join(s.dir, "agentfile.toml"), "--out", out,
			"--set", "train.iterations=2", "--set", "train.tasks_per_iteration=2", "--set", "train.group_size=2",
			"--set", "eval.episodes=2", "--set", "rollout.workers=1")
		if code != 0 {
			t.Fatalf("train -f %s/agentfile.toml: exit %d: %s", s.name, code, errOut)
		}
		metrics, err := os.ReadFile(filepath.Join(out, "metrics.jsonl"))
		if err != nil || strings.Count(string(metrics), "\n") != 2 {
			t.Fatalf("%s: metrics.jsonl: %v\n%s", s.name, err, metrics)
		}
	}
	// Text output of inspect.
	code, out, _ := troupe(t, "inspect", filepath.Join(all[0].dir, all[0].name+".wasm"))
	for _, want := range []string{"abi           v1 (this host speaks v1)", "decisions     wait, work", "env           my_env_go: 2 agents"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("inspect text lacks %q:\n%s", want, out)
		}
	}
}

type buildError struct {
	name string
	err  error
	out  string
}

func (e *buildError) Error() string {
	return "building " + e.name + ": " + e.err.Error() + "\n" + e.out
}

func TestNewAndInspectUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"new", "thing", "x"}, exitUsage, "want a kind (env or reward) and a name"},
		{[]string{"new", "env", "Bad-Name"}, exitUsage, `name "Bad-Name"`},
		{[]string{"new", "env", "ok", "--lang", "rust"}, exitUsage, `--lang "rust": want go or c`},
		{[]string{"new", "env", "ok", "--dir", t.TempDir()}, exitUsage, "already exists"},
		{[]string{"new", "env", "ok", "--troupe-root", t.TempDir(), "--dir", filepath.Join(t.TempDir(), "x")}, exitUsage, "--troupe-root"},
		{[]string{"inspect"}, exitUsage, "want exactly one module file"},
		{[]string{"inspect", filepath.Join(t.TempDir(), "missing.wasm")}, exitUsage, "no such file"},
		{[]string{"inspect", "new.go"}, exitUsage, "not a WebAssembly binary module"},
	} {
		code, _, errOut := troupe(t, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("troupe %v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
}

// The Go scaffolds name the shared metrics with core's constants, gofmt'd;
// the C scaffolds, which have no core package, spell them as core does.
func TestScaffoldsUseCoreMetricNames(t *testing.T) {
	names := []string{core.MetricMakespan, core.MetricReferenceMakespan, core.MetricTokens, core.MetricReferenceTokens}
	for _, kind := range []string{"env", "reward"} {
		for _, lang := range []string{"go", "c"} {
			files, err := scaffold(kind, "my_"+kind, lang, filepath.Join("..", ".."))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range files {
				src := string(f.data)
				switch filepath.Ext(f.name) {
				case ".go":
					if out, err := format.Source(f.data); err != nil || string(out) != src {
						t.Errorf("%s %s: %s is not gofmt'd (%v)", lang, kind, f.name, err)
					}
					for _, n := range names {
						if strings.Contains(src, `"`+n+`"`) {
							t.Errorf("%s %s: %s spells %q instead of using core's constant", lang, kind, f.name, n)
						}
					}
					if !strings.Contains(src, "core.MetricMakespan") {
						t.Errorf("%s %s: %s does not use core.MetricMakespan", lang, kind, f.name)
					}
				case ".c":
					want := names
					if kind == "reward" {
						want = names[:2]
					}
					for _, n := range want {
						if !strings.Contains(src, `"`+n+`"`) && !strings.Contains(src, `\"`+n+`\"`) {
							t.Errorf("%s %s: %s lacks core's metric name %q", lang, kind, f.name, n)
						}
					}
				}
			}
		}
	}
}
