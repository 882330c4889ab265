package rollout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/internal/stats"
)

// stallEnv is a toy team task for the runtime's step limit and failure
// accounting: two agents each step either work (one unit) or wait; the
// task needs 4 + seed%5 units and ends (terminated) when they are done.
// Every unit pays both agents 1 as a per-step reward. The fraction done
// ("progress") and the makespan are reported only at the end: on the
// terminal step, or by Truncate when the env declares it. Its baselines:
// "workers" (both work), "half" (one works), "stallers" (nobody works) and
// "flaky" (both work, but fails on seeds divisible by 3). A task's size
// (4 + seed mod 5 units) is its instance (core.MetricTask).
type stallEnv struct {
	truncatable       bool
	seed              uint64
	units, need, step int
}

func (e *stallEnv) Spec() core.EnvSpec {
	s := core.EnvSpec{
		Name: "stall", Agents: []string{"a", "b"}, ObsSize: 2,
		Decisions: []core.DecisionSpec{{Name: "work"}, {Name: "wait"}},
		StateSize: 1, StepRewards: true, Metrics: []string{"progress", core.MetricMakespan, core.MetricTask},
		Baselines: []string{"workers", "half", "stallers", "flaky"}, ReferenceBaseline: "workers",
		Capabilities: core.CapBaseline,
		TaskNames:    []string{4: "size 4", "size 5", "size 6", "size 7", "size 8"},
	}
	if e.truncatable {
		s.Capabilities |= core.CapTruncate
	}
	return s
}

func (e *stallEnv) obs() []core.Observation {
	f := []float64{float64(e.need) / 8, float64(e.units) / 8}
	return []core.Observation{{Features: f}, {Features: f}}
}

func (e *stallEnv) Reset(seed uint64) ([]core.Observation, error) {
	e.seed, e.units, e.need, e.step = seed, 0, 4+int(seed%5), 0
	return e.obs(), nil
}

func (e *stallEnv) final(r *core.StepResult) {
	r.Metrics = map[string]float64{"progress": float64(min(e.units, e.need)) / float64(e.need), core.MetricMakespan: float64(e.step),
		core.MetricTask: float64(e.need)} // the task instance: its size
}

func (e *stallEnv) Step(a []core.Action) (core.StepResult, error) {
	done := 0
	for _, x := range a {
		if x.Decision == 0 {
			done++
		}
	}
	e.units += done
	e.step++
	r := core.StepResult{Observations: e.obs(), Rewards: []float64{float64(done), float64(done)}}
	if e.units >= e.need {
		r.Terminated = true
		e.final(&r)
	}
	return r, nil
}

func (e *stallEnv) Truncate() (core.StepResult, error) {
	r := core.StepResult{Observations: e.obs(), Truncated: true}
	e.final(&r)
	return r, nil
}

func (e *stallEnv) State() []float64 { return []float64{float64(e.units)} }
func (e *stallEnv) Close() error     { return nil }

func (e *stallEnv) Baseline(name string) (core.Baseline, error) {
	switch name {
	case "workers":
		return fixedBaseline{0, 0}, nil
	case "half":
		return fixedBaseline{0, 1}, nil
	case "stallers":
		return fixedBaseline{1, 1}, nil
	case "flaky":
		return flakyBaseline{e}, nil
	}
	return nil, fmt.Errorf("no baseline %q", name)
}

type fixedBaseline []int

func (b fixedBaseline) Act([]core.Observation) ([]int, error) { return b, nil }

type flakyBaseline struct{ e *stallEnv }

func (b flakyBaseline) Act([]core.Observation) ([]int, error) {
	if b.e.seed%3 == 0 {
		return nil, errors.New("injected fault")
	}
	return []int{0, 0}, nil
}

type stallSource struct{ truncatable bool }

func (s stallSource) Spec() core.EnvSpec      { return (&stallEnv{truncatable: s.truncatable}).Spec() }
func (s stallSource) Open() (core.Env, error) { return &stallEnv{truncatable: s.truncatable}, nil }
func (s stallSource) Close() error            { return nil }

// progressReward scores the env's final "progress" and fails an episode
// that reported none, as a reward that needs a finished document does.
type progressReward struct{}

func (progressReward) Name() string         { return "progress" }
func (progressReward) Components() []string { return []string{"progress"} }
func (progressReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	p, ok := ep.Metrics["progress"]
	if !ok {
		return nil, nil, errors.New("the episode reported no progress")
	}
	return map[string]float64{"progress": p}, nil, nil
}

// returnReward scores the team's per-step rewards, which need no final
// report.
type returnReward struct{}

func (returnReward) Name() string         { return "return" }
func (returnReward) Components() []string { return []string{"team_return"} }
func (returnReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"team_return": ep.AgentReturns[0] + ep.AgentReturns[1]}, nil, nil
}

// stallSetup has a step limit of 4: "workers" finish every task (at most
// 8 units, 2 a step), "half" finishes only tasks of 4 units, "stallers"
// none.
func stallSetup(truncatable bool, rewards ...core.RewardFunc) Setup {
	w := map[string]float64{}
	for _, r := range rewards {
		for _, c := range r.Components() {
			w[c] = 1
		}
	}
	return Setup{Env: stallSource{truncatable}, Rewards: rewards, Weights: w, Rollout: Config{MaxSteps: 4, Workers: 2}}
}

// An episode that reaches the runtime's step limit is truncated through
// the env's Truncate and scored like any other: not failed, in the means,
// counted as truncated.
func TestStepLimitedEpisodeIsScored(t *testing.T) {
	ctx := context.Background()
	s := stallSetup(true, progressReward{})
	const seed = 7 // needs 4 + 7%5 = 6 units; "half" does 4 in 4 steps
	res, err := RunEpisode(ctx, s, nil, "half", seed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Failed || !res.Episode.Truncated || res.Episode.Terminated || !res.StepLimited || res.Episode.Steps != 4 {
		t.Fatalf("step-limited episode: failed %v (%s), truncated %v, terminated %v, step-limited %v, steps %d",
			res.Failed, res.Reason, res.Episode.Truncated, res.Episode.Terminated, res.StepLimited, res.Episode.Steps)
	}
	if want := 4.0 / 6; math.Abs(res.Reward-want) > 1e-12 || res.Metrics[core.MetricMakespan] != 4 {
		t.Fatalf("reward %v, makespan %v; want the partial progress %v from Truncate and 4", res.Reward, res.Metrics[core.MetricMakespan], want)
	}
	if res.Episode.AgentReturns[0] != 4 {
		t.Fatalf("returns %v, want the 4 units' per-step rewards", res.Episode.AgentReturns)
	}

	rep, err := Evaluate(ctx, s, nil, Eval{Episodes: 10, Seed: 3, Policies: []string{"workers", "half", "stallers"}})
	if err != nil {
		t.Fatal(err)
	}
	wantHalf, cut := 0.0, 0
	for i := range 10 {
		need := 4 + int(EvalTaskSeed(3, i)%5)
		wantHalf += float64(min(4, need)) / float64(need) / 10
		if need > 4 {
			cut++
		}
	}
	if cut == 0 {
		t.Fatal("no evaluation seed needs more than 4 units: the case tests nothing")
	}
	for name, want := range map[string]struct {
		reward    float64
		truncated int
	}{"workers": {1, 0}, "half": {wantHalf, cut}, "stallers": {0, 10}} {
		p := rep.Policies[name]
		if p.FailedEpisodes != 0 || p.TruncatedEpisodes != want.truncated || math.Abs(p.Reward-want.reward) > 1e-12 {
			t.Errorf("%s: reward %v, truncated %d, failed %d; want %v over all 10 episodes, %d truncated, 0 failed",
				name, p.Reward, p.TruncatedEpisodes, p.FailedEpisodes, want.reward, want.truncated)
		}
	}
}

// Without a Truncater the episode is scored from its last step: a reward
// that needs the final report fails it with a reason naming the cut, and
// one that needs only per-step rewards scores it.
func TestStepLimitWithoutTruncater(t *testing.T) {
	ctx := context.Background()
	_, err := RunEpisode(ctx, stallSetup(false, progressReward{}), nil, "half", 7, nil)
	if err == nil || !strings.Contains(err.Error(), "reward progress: the episode reported no progress") ||
		!strings.Contains(err.Error(), "cut the episode after 4 steps and env stall declares no core.CapTruncate") {
		t.Fatalf("got %v; want a failed episode whose reason names the reward and the cut", err)
	}
	res, err := RunEpisode(ctx, stallSetup(false, returnReward{}), nil, "half", 7, nil)
	if err != nil || !res.Episode.Truncated || !res.StepLimited || res.Reward != 8 {
		t.Fatalf("per-step rewards without a Truncater: %v, truncated %v, reward %v; want scored, truncated, 8", err, res.Episode.Truncated, res.Reward)
	}
}

// Failed episodes are counted per policy, left out of its means, shown
// with their share next to the means (table, JSON), and left out of the
// paired differences with a count.
func TestFailedEpisodesReported(t *testing.T) {
	ctx := context.Background()
	s := stallSetup(true, progressReward{})
	const n = 12
	failing := 0
	for i := range n {
		if EvalTaskSeed(5, i)%3 == 0 {
			failing++
		}
	}
	if failing == 0 || failing == n {
		t.Fatalf("%d of %d seeds fail: the case tests nothing", failing, n)
	}
	pol, err := policy.New(policy.Config{ObsSize: 2, NumDecisions: 2, NumAgents: 2, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Evaluate(ctx, s, pol, Eval{Episodes: n, Seed: 5, Policies: []string{"grpo", "workers", "flaky"}})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Policies["flaky"]
	if f.FailedEpisodes != failing || math.Abs(f.FailedShare-float64(failing)/n) > 1e-12 || f.Reward != 1 {
		t.Fatalf("flaky: %d failed (share %v), reward %v; want %d, %v, and 1 over the others", f.FailedEpisodes, f.FailedShare, f.Reward, failing, float64(failing)/n)
	}
	if d := rep.Paired["flaky"]; d.Pairs != n-failing || d.Excluded != failing {
		t.Fatalf("grpo − flaky on %d pairs, %d excluded; want %d and %d", d.Pairs, d.Excluded, n-failing, failing)
	}
	var b strings.Builder
	rep.WriteTable(&b)
	cell := fmt.Sprintf("%d (%.3g%%)", failing, 100*float64(failing)/n)
	if !strings.Contains(b.String(), cell) || !strings.Contains(b.String(), fmt.Sprintf("%d (%d excl.)", n-failing, failing)) {
		t.Fatalf("table does not show the failed share %q and the excluded pairs:\n%s", cell, b.String())
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), fmt.Sprintf(`"failed_episodes":%d,"failed_share":%v`, failing, float64(failing)/n)) {
		t.Fatalf("eval --json lacks the failed share: %s", js)
	}
}

// The report's intervals and paired differences are those of the
// per-seed figures, computed here episode by episode with RunEpisode.
func TestEvaluateIntervalsAndPaired(t *testing.T) {
	ctx := context.Background()
	s := stallSetup(true, progressReward{}, returnReward{})
	pol, err := policy.New(policy.Config{ObsSize: 2, NumDecisions: 2, NumAgents: 2, Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	const n = 15
	rep, err := Evaluate(ctx, s, pol, Eval{Episodes: n, Seed: 9, Policies: []string{"grpo", "workers", "half", "stallers"}})
	if err != nil {
		t.Fatal(err)
	}
	per := map[string][]float64{}
	mk := map[string][]float64{}
	var tasks []float64
	for _, name := range []string{"grpo", "workers", "half"} {
		for i := range n {
			var p *policy.Policy
			if name == "grpo" {
				p = pol
			}
			res, err := RunEpisode(ctx, s, p, name, EvalTaskSeed(9, i), nil)
			if err != nil {
				t.Fatal(err)
			}
			per[name] = append(per[name], res.Reward)
			mk[name] = append(mk[name], res.Metrics[core.MetricMakespan])
			if name == "grpo" {
				tasks = append(tasks, res.Metrics[core.MetricTask])
			}
		}
	}
	for _, name := range []string{"grpo", "workers", "half"} {
		p := rep.Policies[name]
		if p.Reward != stats.Mean(per[name]) || p.CI95 == nil || p.CI95.Reward != stats.BootstrapCI(per[name]) {
			t.Errorf("%s: reward %v %+v; want %v %v", name, p.Reward, p.CI95, stats.Mean(per[name]), stats.BootstrapCI(per[name]))
		}
		sp, iv := stats.RatioCI(mk["workers"], mk[name])
		if p.Speedup != sp || p.CI95.Speedup == nil || *p.CI95.Speedup != iv {
			t.Errorf("%s: speedup %v %v; want %v %v", name, p.Speedup, p.CI95.Speedup, sp, iv)
		}
	}
	if rep.BestBaseline != "workers" {
		t.Errorf("best baseline %q, want workers (highest mean reward)", rep.BestBaseline)
	}
	// The best baseline against the others, seed by seed; never against
	// itself or the trained policy.
	if want := stats.PairedDiffCI(per["workers"], per["half"]); rep.BestPaired["half"].Reward.Mean != want.Mean || rep.BestPaired["half"].Reward.CI95 != want.CI95 {
		t.Errorf("workers − half: %+v; want %+v", rep.BestPaired["half"].Reward, want)
	}
	for _, name := range []string{"grpo", "workers", "half", "stallers"} {
		if _, ok := rep.BestPaired[name]; ok == (name == "grpo" || name == "workers") {
			t.Errorf("best baseline paired with %s: %v; want it paired with half and stallers only", name, ok)
		}
	}
	for _, name := range []string{"workers", "half"} {
		want := stats.PairedDiffCI(per["grpo"], per[name])
		got := rep.Paired[name]
		if got.Pairs != n || got.Reward.Mean != want.Mean || got.Reward.CI95 != want.CI95 {
			t.Errorf("grpo − %s: %+v; want %+v", name, got, want)
		}
		// Grouped by the task instance the env reports: the same mean,
		// the interval over instances.
		byTask := stats.PairedDiffByClusterCI(per["grpo"], per[name], tasks)
		if got.RewardByTask == nil || got.RewardByTask.Mean != want.Mean || got.RewardByTask.CI95 != byTask.CI95 ||
			got.RewardByTask.Tasks != 5 || !byTask.CI95.Defined() {
			t.Errorf("grpo − %s by task: %+v; want mean %v, interval %v over 5 instances", name, got.RewardByTask, want.Mean, byTask.CI95)
		}
		// And instance by instance: the seeds of each size, in order.
		if len(got.ByTask) != 5 {
			t.Fatalf("grpo − %s: %d per-task rows, want 5", name, len(got.ByTask))
		}
		for j, p := range got.ByTask {
			var xs, ys []float64
			for i, k := range tasks {
				if int(k) == 4+j {
					xs, ys = append(xs, per["grpo"][i]), append(ys, per[name][i])
				}
			}
			d := stats.PairedDiffCI(xs, ys)
			if p.Task != 4+j || p.Name != fmt.Sprintf("size %d", 4+j) || p.Pairs != len(xs) || p.Reward.Mean != d.Mean ||
				(p.Pairs >= 2 && p.Reward.CI95 != d.CI95) || (p.Pairs < 2 && p.Reward.CI95.Defined()) {
				t.Errorf("grpo − %s on size %d: %+v; want %d pairs, %+v", name, 4+j, p, len(xs), d)
			}
		}
	}
	head, rows := rep.TaskTable()
	if len(rows) != 5 || rows[0][0] != "size 4" || len(head) != 2+3 || head[2] != "grpo − workers*" {
		t.Errorf("task table: %q\n%q", head, rows)
	}
	for name, p := range rep.Policies {
		if _, ok := p.Metrics[core.MetricTask]; ok {
			t.Errorf("%s: the task label is reported as a mean metric", name)
		}
	}
	if _, ok := rep.Paired["grpo"]; ok || len(rep.Paired) != 3 {
		t.Errorf("paired against %d policies (%v); want the 3 others", len(rep.Paired), rep.Paired)
	}
	// The worst baseline is beaten by construction (stallers score 0 and
	// progress is ≥ 0), so the interval of grpo − stallers is ≥ 0.
	if d := rep.Paired["stallers"]; d.Reward.CI95.Lo < 0 {
		t.Errorf("grpo − stallers = %+v, want ≥ 0", d.Reward)
	}
	// Deterministic: a second evaluation gives the same intervals.
	again, err := Evaluate(ctx, s, pol, Eval{Episodes: n, Seed: 9, Policies: []string{"grpo", "workers", "half", "stallers"}})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(rep)
	b, _ := json.Marshal(again)
	if string(a) != string(b) {
		t.Fatalf("two evaluations differ:\n%s\n%s", a, b)
	}
	var back struct {
		Paired map[string]struct {
			RewardByTask struct {
				Mean  float64        `json:"mean"`
				CI95  stats.Interval `json:"ci95"`
				Tasks int            `json:"tasks"`
			} `json:"reward_by_task"`
			ByTask []TaskPair `json:"by_task"`
		} `json:"paired"`
	}
	if err := json.Unmarshal(a, &back); err != nil {
		t.Fatal(err)
	}
	if got, want := back.Paired["half"].RewardByTask, rep.Paired["half"].RewardByTask; got.Mean != want.Mean || got.CI95 != want.CI95 || got.Tasks != 5 {
		t.Fatalf("eval --json reward_by_task %+v, want %+v", got, *want)
	}
	if got, want := back.Paired["half"].ByTask, rep.Paired["half"].ByTask; len(got) != 5 || got[2].Name != "size 6" || got[2].Pairs != want[2].Pairs ||
		got[2].Reward.Mean != want[2].Reward.Mean || got[2].Reward.CI95.Defined() != want[2].Reward.CI95.Defined() {
		t.Fatalf("eval --json by_task %+v, want %+v", got, want)
	}
}

// Per instance: seeds grouped by their task value in increasing order, a
// seed without one left out, a failed episode excluded from its
// instance's pairs, and no interval for an instance of one pair.
func TestPairsByTask(t *testing.T) {
	nan := math.NaN()
	x := []float64{1, 2, 3, 4, 5, 6}
	y := []float64{0, 0, nan, 1, 1, 0}
	task := []float64{2, 0, 0, 2, nan, 0}
	got := pairsByTask(x, y, task, []string{"a", "b"})
	if len(got) != 2 {
		t.Fatalf("%d instances, want 2: %+v", len(got), got)
	}
	zero, two := got[0], got[1]
	if zero.Task != 0 || zero.Name != "a" || zero.Pairs != 2 || zero.Reward.Mean != 4 || !zero.Reward.CI95.Defined() {
		t.Errorf("instance 0: %+v; want 2 pairs (seeds 1 and 5; seed 2 failed), mean (2 + 6) / 2 = 4, an interval", zero)
	}
	if two.Task != 2 || two.Name != "" || two.Pairs != 2 || two.Reward.Mean != 2 {
		t.Errorf("instance 2: %+v; want no name (beyond the names), 2 pairs, mean (1 + 3) / 2 = 2", two)
	}
	one := pairsByTask([]float64{3}, []float64{1}, []float64{1}, nil)
	if len(one) != 1 || one[0].Pairs != 1 || one[0].Reward.Mean != 2 || one[0].Reward.CI95.Defined() {
		t.Errorf("one pair: %+v; want mean 2 and no interval", one)
	}
}
