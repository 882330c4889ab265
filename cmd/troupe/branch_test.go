package main

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
)

// branchReturn scores an episode by the sum of its agents' returns.
type branchReturn struct{}

func (branchReturn) Name() string         { return "team" }
func (branchReturn) Components() []string { return []string{"team"} }
func (branchReturn) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	sum := 0.0
	for _, r := range ep.AgentReturns {
		sum += r
	}
	return map[string]float64{"team": sum}, nil, nil
}

// TestBranchReplaysOnThreeLoaders loads Level-Based Foraging natively, as
// a Wasm module and as a go-plugin binary and, on each: runs the
// conformance kit (which replays a prefix and branches off it); replays
// sampled episodes from their recorded decisions through the rollout pool,
// requiring each episode again to the bit; plays branches (the first half
// replayed, one decision changed, the policy after), requiring the same
// results on the three loaders; then trains with counterfactual credit and
// requires the same metrics and policy on the three.
func TestBranchReplaysOnThreeLoaders(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two plugins")
	}
	dir := t.TempDir()
	wasm, plug := filepath.Join(dir, "lbf.wasm"), filepath.Join(dir, "lbf-plugin")
	for _, b := range []struct {
		out, pkg string
		env      []string
	}{{wasm, "./examples/wasm-lbf", []string{"GOOS=wasip1", "GOARCH=wasm"}}, {plug, "./internal/testplugins/grpc/lbf", nil}} {
		cmd := exec.Command("go", "build", "-o", b.out)
		if b.env != nil {
			cmd.Args = append(cmd.Args, "-buildmode=c-shared")
		}
		cmd.Args = append(cmd.Args, b.pkg)
		cmd.Env, cmd.Dir = append(os.Environ(), b.env...), "../.."
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	params := map[string]any{"size": 6, "max_steps": 30}
	ctx := context.Background()
	var branched [][]rollout.EpisodeResult
	for _, ref := range []core.SourceRef{{Scheme: "builtin", Path: "lbf"}, {Scheme: "wasm", Path: wasm}, {Scheme: "grpc", Path: plug}} {
		ref.Params = params
		src, err := core.LoadEnv(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		envtest.Check(t, src)
		branched = append(branched, replayAndBranch(t, ref.Scheme, src))
	}
	for l := 1; l < 3; l++ {
		for k := range branched[0] {
			if diff := episodeDiff(branched[0][k], branched[l][k]); diff != "" {
				t.Errorf("loader %d: branch %d differs from native: %s", l, k, diff)
			}
		}
	}
	project := `[project]
name = "lbf-branch"
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
tasks_per_iteration = 2
group_size = 4
credit = "counterfactual"
branch_points = 2
branch_partners = 1
branch_aggregate = "max"
[rollout]
workers = 2
`
	for i, m := range trainOnEveryLoader(t, dir, project, wasm, plug) {
		if len(m) != 2 || !strings.Contains(m[0], `"branch_episodes":`) {
			t.Fatalf("loader %d: metrics without branches:\n%s", i, strings.Join(m, "\n"))
		}
	}
}

// replayAndBranch samples episodes of src, requires their replays to be
// the episodes to the bit, and returns the results of branching each at
// its middle recorded decision.
func replayAndBranch(t *testing.T, loader string, src core.EnvSource) []rollout.EpisodeResult {
	t.Helper()
	ctx := context.Background()
	spec := src.Spec()
	s := &rollout.Setup{Name: "branch", Env: src, Rewards: []core.RewardFunc{branchReturn{}}, Weights: map[string]float64{"team": 1},
		Rollout: rollout.Config{Workers: 2, MaxSteps: 1000}, Seed: 11}
	pol, err := policy.New(policy.Config{ObsSize: spec.ObsSize, NumDecisions: len(spec.Decisions), NumAgents: spec.NumAgents(), Hidden: []int{8}, Shared: true, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := rollout.NewPool(s)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	var jobs []rollout.Job
	for task := 0; task < 4; task++ {
		ts := rollout.TrainTaskSeed(s.Seed, 0, task)
		jobs = append(jobs, rollout.Job{Task: ts, Rollout: rollout.RolloutSeed(ts, 0)})
	}
	played, err := pool.Sample(ctx, jobs, pol)
	if err != nil {
		t.Fatal(err)
	}
	n := spec.NumAgents()
	prefix := func(r rollout.EpisodeResult, steps int) [][]int {
		p := make([][]int, steps)
		for s := range p {
			p[s] = slices.Repeat([]int{-1}, n)
		}
		for _, d := range r.Decisions {
			if d.Step < steps {
				p[d.Step][d.Agent] = d.Action
			}
		}
		return p
	}
	var replays, branches []rollout.Job
	for k, r := range played {
		if r.Failed || len(r.Decisions) < 2 {
			t.Fatalf("%s: episode %d failed or too short: %+v", loader, k, r)
		}
		replays = append(replays, rollout.Job{Task: jobs[k].Task, Rollout: jobs[k].Rollout, Prefix: prefix(r, r.Episode.Steps)})
		d := r.Decisions[len(r.Decisions)/2]
		p := prefix(r, d.Step+1)
		for a, legal := range d.Mask {
			if legal && a != d.Action {
				p[d.Step][d.Agent] = a
				break
			}
		}
		branches = append(branches, rollout.Job{Task: jobs[k].Task, Rollout: jobs[k].Rollout, Prefix: p})
	}
	again, err := pool.Replay(ctx, replays, pol)
	if err != nil {
		t.Fatal(err)
	}
	for k := range played {
		if diff := episodeDiff(played[k], again[k]); diff != "" {
			t.Errorf("%s: episode %d: the replay differs: %s", loader, k, diff)
		}
	}
	out, err := pool.Replay(ctx, branches, pol)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// episodeDiff says how two results differ (floats to the bit), or "".
func episodeDiff(a, b rollout.EpisodeResult) string {
	bits := func(xs []float64) []uint64 {
		var out []uint64
		for _, x := range xs {
			out = append(out, math.Float64bits(x))
		}
		return out
	}
	switch {
	case a.Failed || b.Failed:
		return "failed: " + a.Reason + " / " + b.Reason
	case math.Float64bits(a.Reward) != math.Float64bits(b.Reward):
		return "reward"
	case a.Episode.Steps != b.Episode.Steps || a.Episode.Terminated != b.Episode.Terminated || a.Episode.Truncated != b.Episode.Truncated:
		return "steps or end"
	case !reflect.DeepEqual(bits(a.Episode.AgentReturns), bits(b.Episode.AgentReturns)):
		return "returns"
	case !reflect.DeepEqual(a.Episode.Metrics, b.Episode.Metrics):
		return "metrics"
	}
	return ""
}
