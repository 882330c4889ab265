package rollout_test

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/envs/lbf"
	"github.com/troupe-dev/troupe/envs/matrix"
)

// teamReturn scores an episode by the sum of its agents' returns.
type teamReturn struct{}

func (teamReturn) Name() string         { return "team" }
func (teamReturn) Components() []string { return []string{"team"} }
func (teamReturn) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	sum := 0.0
	for _, r := range ep.AgentReturns {
		sum += r
	}
	return map[string]float64{"team": sum}, nil, nil
}

func lbfPool(t *testing.T, workers int) (*rollout.Pool, *policy.Policy, core.EnvSpec) {
	t.Helper()
	return newPool(t, workers, func(p map[string]any) (core.Env, error) { return lbf.New(p) }, map[string]any{"size": 6, "max_steps": 30})
}

func newPool(t *testing.T, workers int, f core.EnvFactory, params map[string]any) (*rollout.Pool, *policy.Policy, core.EnvSpec) {
	t.Helper()
	src, err := core.NewEnvSource(f, params)
	if err != nil {
		t.Fatal(err)
	}
	s := &rollout.Setup{Name: "replay", Env: src, Rewards: []core.RewardFunc{teamReturn{}}, Weights: map[string]float64{"team": 1},
		Rollout: rollout.Config{Workers: workers, MaxSteps: 1000}, Seed: 9}
	spec := src.Spec()
	pol, err := policy.New(policy.Config{ObsSize: spec.ObsSize, NumDecisions: len(spec.Decisions), NumAgents: spec.NumAgents(), Hidden: []int{8}, Shared: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	p, err := rollout.NewPool(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p, pol, spec
}

// prefixOf returns the recorded joint decisions of steps 0..n−1 (−1 where
// an agent had a single legal decision).
func prefixOf(r rollout.EpisodeResult, agents, n int) [][]int {
	prefix := make([][]int, n)
	for s := range prefix {
		prefix[s] = make([]int, agents)
		for i := range prefix[s] {
			prefix[s][i] = -1
		}
	}
	for _, d := range r.Decisions {
		if d.Step < n {
			prefix[d.Step][d.Agent] = d.Action
		}
	}
	return prefix
}

// sameEpisode reports how a and b differ (floats compared to the bit), or "".
func sameEpisode(a, b rollout.EpisodeResult) string {
	bits := func(xs []float64) []uint64 {
		var out []uint64
		for _, x := range xs {
			out = append(out, math.Float64bits(x))
		}
		return out
	}
	switch {
	case a.Failed || b.Failed:
		return "failed: " + a.Reason + b.Reason
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

// A replay of an episode's recorded decisions with its seeds is the
// episode, bit for bit, whatever the number of workers; a branch (one
// decision changed) is played as well, the same on 1 and 3 workers; a
// replay that does not fit the env fails its episode; Sample refuses a
// forced prefix.
func TestReplayReproducesEpisodes(t *testing.T) {
	ctx := context.Background()
	pool, pol, spec := lbfPool(t, 3)
	var jobs []rollout.Job
	for task := 0; task < 3; task++ {
		ts := rollout.TrainTaskSeed(9, 0, task)
		for g := 0; g < 2; g++ {
			jobs = append(jobs, rollout.Job{Task: ts, Rollout: rollout.RolloutSeed(ts, g)})
		}
	}
	played, err := pool.Sample(ctx, jobs, pol)
	if err != nil {
		t.Fatal(err)
	}
	var replays, branches []rollout.Job
	for k, r := range played {
		if r.Failed || len(r.Decisions) < 2 {
			t.Fatalf("episode %d: failed or too short to branch: %+v", k, r)
		}
		replays = append(replays, rollout.Job{Task: jobs[k].Task, Rollout: jobs[k].Rollout, Prefix: prefixOf(r, spec.NumAgents(), r.Episode.Steps)})
		// Branch at the middle recorded decision: another legal decision.
		d := r.Decisions[len(r.Decisions)/2]
		prefix := prefixOf(r, spec.NumAgents(), d.Step+1)
		for a := range d.Mask {
			if d.Mask[a] && a != d.Action {
				prefix[d.Step][d.Agent] = a
				break
			}
		}
		branches = append(branches, rollout.Job{Task: jobs[k].Task, Rollout: jobs[k].Rollout, Prefix: prefix})
	}
	again, err := pool.Replay(ctx, replays, pol)
	if err != nil {
		t.Fatal(err)
	}
	for k := range played {
		if diff := sameEpisode(played[k], again[k]); diff != "" {
			t.Errorf("episode %d: the replay differs from the episode: %s", k, diff)
		}
		if len(again[k].Decisions) != 0 {
			t.Errorf("episode %d: a replay recorded %d decisions", k, len(again[k].Decisions))
		}
	}
	branched, err := pool.Replay(ctx, branches, pol)
	if err != nil {
		t.Fatal(err)
	}
	one, _, _ := lbfPool(t, 1)
	branched1, err := one.Replay(ctx, branches, pol)
	if err != nil {
		t.Fatal(err)
	}
	for k := range branched {
		if diff := sameEpisode(branched[k], branched1[k]); diff != "" {
			t.Errorf("branch %d: 3 workers and 1 differ: %s", k, diff)
		}
		if branched[k].Failed {
			t.Errorf("branch %d failed: %s", k, branched[k].Reason)
		}
	}
	bad := []rollout.Job{{Task: jobs[0].Task, Rollout: jobs[0].Rollout, Prefix: [][]int{{len(spec.Decisions), -1}}}}
	res, err := pool.Replay(ctx, bad, pol)
	if err != nil {
		t.Fatal(err)
	}
	if !res[0].Failed || !strings.Contains(res[0].Reason, "recorded decision 6 is not legal") {
		t.Errorf("an unplayable prefix: failed %v, reason %q", res[0].Failed, res[0].Reason)
	}
	if _, err := pool.Sample(ctx, replays, pol); err == nil || !strings.Contains(err.Error(), "forced prefix") {
		t.Errorf("Sample with a prefix: %v", err)
	}
}

// A branch changes exactly the decision it forces: on Climbing (a stateless
// game, so the continuation after the branch step repeats the recorded
// one, with the same random numbers), the branch's return is the episode's
// minus the recorded step payoff plus the branched one.
func TestBranchChangesOneDecision(t *testing.T) {
	ctx := context.Background()
	pool, pol, spec := newPool(t, 2, func(p map[string]any) (core.Env, error) { return matrix.New(p) }, map[string]any{"game": "climbing"})
	game, err := matrix.New(map[string]any{"game": "climbing"})
	if err != nil {
		t.Fatal(err)
	}
	ts := rollout.TrainTaskSeed(1, 0, 0)
	var jobs []rollout.Job
	for g := 0; g < 4; g++ {
		jobs = append(jobs, rollout.Job{Task: ts, Rollout: rollout.RolloutSeed(ts, g)})
	}
	played, err := pool.Sample(ctx, jobs, pol)
	if err != nil {
		t.Fatal(err)
	}
	var branches []rollout.Job
	var want []float64
	for k, r := range played {
		for _, step := range []int{0, 7, 24} {
			prefix := prefixOf(r, spec.NumAgents(), step+1)
			a, b := prefix[step][0], prefix[step][1]
			alt := (a + 1 + k%2) % 3
			prefix[step][0] = alt
			branches = append(branches, rollout.Job{Task: jobs[k].Task, Rollout: jobs[k].Rollout, Prefix: prefix})
			// Both agents receive the payoff: the team return counts it twice.
			want = append(want, r.Reward+2*(game.Payoff(alt, b)-game.Payoff(a, b)))
		}
	}
	got, err := pool.Replay(ctx, branches, pol)
	if err != nil {
		t.Fatal(err)
	}
	differ := 0
	for k := range got {
		if got[k].Failed || got[k].Reward != want[k] {
			t.Errorf("branch %d: reward %v (failed %v %s), want %v", k, got[k].Reward, got[k].Failed, got[k].Reason, want[k])
		}
		if want[k] != played[k/3].Reward {
			differ++
		}
	}
	if differ == 0 {
		t.Errorf("no branch changed the return: the test cannot tell a forced decision from an ignored one")
	}
}
