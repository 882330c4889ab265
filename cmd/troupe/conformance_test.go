package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// TestTrainSameOnThreeLoaders loads Level-Based Foraging natively, as a
// Wasm module built with the guest kit and as a go-plugin binary built with
// the serve kit, requires the same trajectories step by step, then trains
// on each and requires the same metrics and the same policy.
func TestTrainSameOnThreeLoaders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two plugins")
	}
	dir := t.TempDir()
	wasm, plug := filepath.Join(dir, "lbf.wasm"), filepath.Join(dir, "lbf-plugin")
	build := func(out, pkg string, env ...string) {
		cmd := exec.Command("go", "build", "-o", out)
		if len(env) > 0 {
			cmd.Args = append(cmd.Args, "-buildmode=c-shared")
		}
		cmd.Args = append(cmd.Args, pkg)
		cmd.Env = append(os.Environ(), env...)
		cmd.Dir = "../.."
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, b)
		}
	}
	build(wasm, "./examples/wasm-lbf", "GOOS=wasip1", "GOARCH=wasm")
	build(plug, "./internal/testplugins/grpc/lbf")
	// Step by step first: the three loaders give the same trajectories.
	params := map[string]any{"size": 6, "max_steps": 30}
	var sources []core.EnvSource
	for _, ref := range []core.SourceRef{{Scheme: "builtin", Path: "lbf"}, {Scheme: "wasm", Path: wasm}, {Scheme: "grpc", Path: plug}} {
		ref.Params = params
		src, err := core.LoadEnv(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		sources = append(sources, src)
	}
	envtest.SameTrajectories(t, sources[0], sources[1])
	envtest.SameTrajectories(t, sources[0], sources[2])
	project := `[project]
name = "lbf3"
seed = 5
[env]
source = "SOURCE"
[env.params]
size = 6
max_steps = 30
[[rewards]]
source = "builtin:return"
[reward.weights]
return = 1.0
[train]
iterations = 2
tasks_per_iteration = 4
group_size = 4
[rollout]
workers = 2
`
	trainOnEveryLoader(t, dir, project, wasm, plug)
}

// trainOnEveryLoader trains project (an agentfile whose env source is the
// placeholder SOURCE) on the LBF env built in, as the Wasm module wasm and
// as the go-plugin binary plug, each into its own directory under dir;
// it requires the three runs' metrics (without timings) and policy files
// to be identical, and returns each run's metrics lines.
func trainOnEveryLoader(t *testing.T, dir, project, wasm, plug string) [][]string {
	t.Helper()
	var metrics [][]string
	var policies [][]byte
	for _, src := range []string{"builtin:lbf", "wasm:" + wasm, "grpc:" + plug} {
		out := filepath.Join(dir, strings.SplitN(src, ":", 2)[0])
		af := writeAgentfile(t, strings.Replace(project, "SOURCE", src, 1))
		if code, _, stderr := troupe(t, "train", "-f", af, "--out", out, "--no-eval"); code != exitOK {
			t.Fatalf("train on %s: exit %d: %s", src, code, stderr)
		}
		metrics = append(metrics, testenv.MetricsWithoutTiming(t, filepath.Join(out, "metrics.jsonl")))
		p, err := os.ReadFile(filepath.Join(out, "policy.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		policies = append(policies, p)
	}
	for i := 1; i < 3; i++ {
		if strings.Join(metrics[i], "\n") != strings.Join(metrics[0], "\n") {
			t.Errorf("loader %d: metrics differ from native:\n%s\n---\n%s", i, strings.Join(metrics[0], "\n"), strings.Join(metrics[i], "\n"))
		}
		if string(policies[i]) != string(policies[0]) {
			t.Errorf("loader %d: policy differs from native", i)
		}
	}
	return metrics
}
