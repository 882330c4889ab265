package trainer

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/envs/matrix"
)

// matrixReturn scores a matrix-game episode by its team return.
type matrixReturn struct{}

func (matrixReturn) Name() string         { return "return" }
func (matrixReturn) Components() []string { return []string{"return"} }
func (matrixReturn) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"return": ep.Metrics[core.MetricReturn]}, nil, nil
}

// matrixProject is the setup of examples/climbing and examples/penalty.
func matrixProject(t *testing.T, game string, seed uint64, workers int) (rollout.Setup, Config) {
	t.Helper()
	params := map[string]any{"game": game}
	src, err := core.NewEnvSource(func(p map[string]any) (core.Env, error) { return matrix.New(p) }, params)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Iterations, cfg.TasksPerIteration, cfg.GroupSize = 60, 4, 16
	cfg.LearningRate, cfg.Entropy, cfg.Hidden, cfg.SharePolicy = 0.01, 0.01, []int{16}, false
	s := rollout.Setup{Name: game, Env: src, Rewards: []core.RewardFunc{matrixReturn{}}, Weights: map[string]float64{"return": 1},
		Rollout: rollout.Config{Workers: workers, MaxSteps: 1000}, Seed: seed}
	return s, cfg
}

// With the others held as recorded, mean aggregation, mean baseline and
// no scaling, a decision's counterfactual advantage on Climbing is, by
// hand, the payoff of its joint action minus the mean payoff of the
// agent's three decisions against the partner's recorded one (the game is
// stateless, so the continuation after the branch repeats the recorded
// one). Every decision is credited when BranchPoints covers them all.
func TestCounterfactualAdvantageByHand(t *testing.T) {
	s, cfg := matrixProject(t, matrix.Climbing, 3, 2)
	cfg.Credit, cfg.BranchPoints = CreditCounterfactual, 100
	cfg.Baseline, cfg.Scale = grpo.BaselineMean, grpo.ScaleNone
	cfg.TasksPerIteration, cfg.GroupSize = 2, 2
	tr, err := New(s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	game, _ := matrix.New(map[string]any{"game": matrix.Climbing})
	var jobs []rollout.Job
	for task := 0; task < 2; task++ {
		ts := rollout.TrainTaskSeed(s.Seed, 0, task)
		for g := 0; g < 2; g++ {
			jobs = append(jobs, rollout.Job{Task: ts, Rollout: rollout.RolloutSeed(ts, g)})
		}
	}
	results, err := tr.pool.Sample(context.Background(), 1, jobs, tr.pol)
	if err != nil {
		t.Fatal(err)
	}
	c, err := tr.credit(context.Background(), jobs, results, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.branches != 4*50*2 || c.failedBranches != 0 || c.groups != 4*50 {
		t.Fatalf("%d branches (%d failed) in %d groups, want 400 in 200", c.branches, c.failedBranches, c.groups)
	}
	for k, r := range results {
		joint := map[int][2]int{}
		for _, d := range r.Decisions {
			a := joint[d.Step]
			a[d.Agent] = d.Action
			joint[d.Step] = a
		}
		for j, d := range r.Decisions {
			a := joint[d.Step]
			mean := 0.0
			for alt := 0; alt < 3; alt++ {
				b := a
				b[d.Agent] = alt
				mean += game.Payoff(b[0], b[1]) / 3
			}
			want := game.Payoff(a[0], a[1]) - mean
			if !c.credited[k][j] || math.Abs(c.decision[k][j]-want) > 1e-9 {
				t.Fatalf("episode %d step %d agent %d (joint %v): advantage %v (credited %v), want %v", k, d.Step, d.Agent, a, c.decision[k][j], c.credited[k][j], want)
			}
		}
	}
}

// Counterfactual training is the same, to the bit, on 1 worker and on 3:
// statistics (timing aside) and the trained policy.
func TestCounterfactualSameOnWorkers(t *testing.T) {
	var stats [][]IterationStats
	var params [][]byte
	for _, workers := range []int{1, 3} {
		s, cfg := matrixProject(t, matrix.Climbing, 4, workers)
		cfg.Credit, cfg.BranchPartners, cfg.BranchAggregate = CreditCounterfactual, 1, AggregateMax
		cfg.TasksPerIteration, cfg.GroupSize = 2, 4
		tr, err := New(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		var run []IterationStats
		for i := 0; i < 3; i++ {
			st, _, err := tr.Step(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			st.StepsPerSec, st.WallS = 0, 0
			run = append(run, st)
		}
		b := policyBytes(t, tr.Policy())
		tr.Close()
		stats, params = append(stats, run), append(params, b)
	}
	for i := range stats[0] {
		a, b := stats[0][i], stats[1][i]
		if a.BranchEpisodes == 0 || a.Decisions == 0 {
			t.Fatalf("iteration %d: %d branches, %d decisions: nothing was branched", i+1, a.BranchEpisodes, a.Decisions)
		}
		if a.Loss != b.Loss || a.RewardMean != b.RewardMean || a.EnvSteps != b.EnvSteps || a.BranchEpisodes != b.BranchEpisodes || a.Decisions != b.Decisions || a.KL != b.KL {
			t.Errorf("iteration %d: 1 worker %+v\n3 workers %+v", i+1, a, b)
		}
	}
	if string(params[0]) != string(params[1]) {
		t.Errorf("the policies trained on 1 and 3 workers differ")
	}
}

// policyBytes is pol saved as a safetensors file, read back.
func policyBytes(t *testing.T, pol *policy.Policy) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "policy.safetensors")
	if err := pol.Save(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The branch settings are checked, each naming its key.
func TestBranchSettings(t *testing.T) {
	for _, c := range []struct {
		mut  func(*Config)
		want string
	}{
		{func(c *Config) { c.Credit = "lenient" }, "credit: must be joint, independent, counterfactual or value"},
		{func(c *Config) { c.BranchPoints = 0 }, "branch_points: must be at least 1"},
		{func(c *Config) { c.BranchPartners = -1 }, "branch_partners: must be ≥ 0"},
		{func(c *Config) { c.BranchAggregate = "min" }, "branch_aggregate: must be mean or max"},
		{func(c *Config) { c.BranchAggregate = AggregateMax }, "branch_aggregate: max needs branch_partners ≥ 1"},
	} {
		cfg := DefaultConfig()
		c.mut(&cfg)
		err := cfg.Validate()
		if _, ok := err.(*core.SettingError); !ok || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want a setting error containing %q", err, c.want)
		}
	}
}

// Counterfactual credit replays episodes, so it refuses a real LLM (whose
// replies would be asked for again, and differ).
func TestCounterfactualRefusesRealLLM(t *testing.T) {
	s := toySetup(1)
	s.Agents = []rollout.AgentLLM{{Backend: panickyLLM{}}}
	s.Train.Credit = CreditCounterfactual
	if _, err := New(s.Setup, s.Train); err == nil || !strings.Contains(err.Error(), `credit = "counterfactual" replays episodes, which needs the simulated LLM`) {
		t.Fatalf("got %v", err)
	}
}

// An env that replays recorded completions itself (no decision needs
// text, and it lists core.MetricReplayedCalls: backend "replay", as
// builtin:classeval) replays by the env contract, so counterfactual credit
// accepts it and branches it.
func TestCounterfactualOnReplayEnv(t *testing.T) {
	s, cfg := matrixProject(t, matrix.Climbing, 4, 1)
	s.Env = replayingSource{s.Env}
	if b := s.Backend(s.Env.Spec()); b != "replay" {
		t.Fatalf("backend %q, want replay", b)
	}
	cfg.Credit, cfg.TasksPerIteration, cfg.GroupSize = CreditCounterfactual, 2, 1
	st, _ := firstIteration(t, s, cfg)
	if st.BranchEpisodes == 0 || st.FailedBranches != 0 {
		t.Fatalf("%d branches, %d failed: want branches, none failed", st.BranchEpisodes, st.FailedBranches)
	}
}

// replayingSource opens its envs wrapped in replayingEnv.
type replayingSource struct{ core.EnvSource }

func (s replayingSource) Spec() core.EnvSpec { return replayingSpec(s.EnvSource.Spec()) }
func (s replayingSource) Open() (core.Env, error) {
	e, err := s.EnvSource.Open()
	if err != nil {
		return nil, err
	}
	return replayingEnv{e}, nil
}

// replayingEnv reports one replayed call per step, as an env whose
// completions are recordings does.
type replayingEnv struct{ core.Env }

func (e replayingEnv) Truncate() (core.StepResult, error) { return e.Env.(core.Truncater).Truncate() }

func (e replayingEnv) Spec() core.EnvSpec { return replayingSpec(e.Env.Spec()) }
func (e replayingEnv) Step(a []core.Action) (core.StepResult, error) {
	r, err := e.Env.Step(a)
	if r.Metrics == nil {
		r.Metrics = map[string]float64{}
	}
	r.Metrics[core.MetricReplayedCalls]++
	return r, err
}

func replayingSpec(sp core.EnvSpec) core.EnvSpec {
	sp.Metrics = append(slices.Clone(sp.Metrics), core.MetricReplayedCalls)
	return sp
}

// greedyReturn is the team return of the policy's greedy joint action on
// a 25-step matrix game.
func greedyReturn(t *testing.T, pol *policy.Policy, game string) float64 {
	t.Helper()
	g, err := matrix.New(map[string]any{"game": game})
	if err != nil {
		t.Fatal(err)
	}
	lp := make([]float64, 3)
	var a [2]int
	for i := range a {
		if err := pol.LogProbs(i, []float64{1}, []bool{true, true, true}, lp); err != nil {
			t.Fatal(err)
		}
		a[i] = policy.Greedy(lp)
	}
	return 25 * g.Payoff(a[0], a[1])
}

// On Climbing, seed 1, the settings of examples/climbing: joint credit
// stops at 175 (both play a1); the shipped counterfactual credit (4 branch
// points, 2 partners, max) reaches the optimum 275.
func TestCounterfactualClimbsClimbing(t *testing.T) {
	if testing.Short() {
		t.Skip("trains twice on Climbing")
	}
	for _, c := range []struct {
		credit Credit
		want   float64
	}{{CreditJoint, 175}, {CreditCounterfactual, 275}} {
		s, cfg := matrixProject(t, matrix.Climbing, 1, 2)
		cfg.Credit = c.credit
		if c.credit == CreditCounterfactual {
			cfg.BranchPartners, cfg.BranchAggregate = 2, AggregateMax
		}
		tr, err := New(s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < cfg.Iterations; i++ {
			if _, _, err := tr.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		if got := greedyReturn(t, tr.Policy(), matrix.Climbing); got != c.want {
			t.Errorf("credit %s: greedy return %v, want %v", c.credit, got, c.want)
		}
		tr.Close()
	}
}

// A decision's value over the partner sets: their mean, or their best.
func TestAggregate(t *testing.T) {
	vs := []float64{-30, 11, 7}
	if got := aggregate(AggregateMean, vs); math.Abs(got-(-12.0/3)) > 1e-12 {
		t.Errorf("mean: %v, want -4", got)
	}
	if got := aggregate(AggregateMax, vs); got != 11 {
		t.Errorf("max: %v, want 11", got)
	}
}
