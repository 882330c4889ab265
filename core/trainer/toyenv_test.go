package trainer

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
)

// toyEnv is a small cooperative task for the runtime's tests: each step the
// two agents pick one of three numbers; they score when both pick the
// task's target (drawn from the seed). Decision 2 ("say") needs LLM text:
// an agent that says something before picking gets a small bonus. failSeed
// makes Step fail for that task seed (to test failure handling).
type toyEnv struct {
	steps, t int
	target   int
	said     []bool
	tokens   int
	failSeed uint64
	seed     uint64
	trapStep int
	// closed, if set, counts Close calls; the workers' envs share it.
	closed *atomic.Int64
	// nanMetric makes Step report the metric "wobble" as NaN.
	nanMetric bool
}

func newToy() *toyEnv { return &toyEnv{steps: 6, trapStep: 2} }

func (e *toyEnv) Spec() core.EnvSpec {
	return core.EnvSpec{
		Name: "toy", Agents: []string{"a", "b"}, ObsSize: 4,
		Decisions: []core.DecisionSpec{{Name: "pick0"}, {Name: "pick1"}, {Name: "say", NeedsText: true}},
		StateSize: 1, StepRewards: true, Metrics: []string{core.MetricReturn},
		Capabilities: core.CapSimulate,
	}
}

func (e *toyEnv) obs() []core.Observation {
	out := make([]core.Observation, 2)
	for i := range out {
		f := []float64{1, float64(e.target), float64(e.t) / float64(e.steps), 0}
		if e.said[i] {
			f[3] = 1
		}
		out[i] = core.Observation{Features: f, Text: fmt.Sprintf("agent %d, step %d", i, e.t), Mask: []bool{true, true, !e.said[i]}}
	}
	return out
}

func (e *toyEnv) Reset(seed uint64) ([]core.Observation, error) {
	r := rand.New(rand.NewPCG(seed, 1))
	e.t, e.target, e.said, e.tokens, e.seed = 0, r.IntN(2), make([]bool, 2), 0, seed
	return e.obs(), nil
}

func (e *toyEnv) Step(a []core.Action) (core.StepResult, error) {
	if e.failSeed != 0 && e.seed == e.failSeed && e.t == e.trapStep {
		return core.StepResult{}, errors.New("injected failure")
	}
	rew := 0.0
	if a[0].Decision == e.target && a[1].Decision == e.target {
		rew = 1
	}
	for i, x := range a {
		if x.Decision == 2 {
			if !strings.HasPrefix(x.Text, "hello") {
				return core.StepResult{}, fmt.Errorf("agent %d said %q", i, x.Text)
			}
			e.said[i] = true
			e.tokens += x.Usage.Tokens()
		}
	}
	e.t++
	res := core.StepResult{Observations: e.obs(), Rewards: []float64{rew, rew}, Terminated: e.t >= e.steps}
	res.Metrics = map[string]float64{core.MetricTokens: float64(e.tokens), core.MetricReferenceTokens: 100, core.MetricMakespan: float64(e.t), core.MetricReferenceMakespan: float64(e.steps)}
	if e.nanMetric {
		res.Metrics["wobble"] = math.NaN()
	}
	return res, nil
}

func (e *toyEnv) State() []float64 { return []float64{float64(e.target)} }
func (e *toyEnv) Close() error {
	if e.closed != nil {
		e.closed.Add(1)
	}
	return nil
}

func (e *toyEnv) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	return core.SimCompletion{Text: fmt.Sprintf("hello from %d #%d", agent, rng.IntN(100)), PromptTokens: 10, CompletionTokens: 5}, nil
}

// toySource opens toy envs.
type toySource struct{ mk func() *toyEnv }

func (s toySource) Spec() core.EnvSpec      { return s.mk().Spec() }
func (s toySource) Open() (core.Env, error) { return s.mk(), nil }
func (toySource) Close() error              { return nil }

// returnReward sums the per-step rewards of agent 0 (both are equal).
type returnReward struct{}

func (returnReward) Name() string         { return "toy.return" }
func (returnReward) Components() []string { return []string{"quality"} }
func (returnReward) Score(ep *core.Episode) (map[string]float64, map[string]float64, error) {
	return map[string]float64{"quality": ep.AgentReturns[0]}, map[string]float64{core.MetricReturn: ep.AgentReturns[0]}, nil
}

// toyProject is what a project file would configure for the toy env.
type toyProject struct {
	rollout.Setup
	Train Config
	Eval  rollout.Eval
}

func toySetup(workers int) toyProject {
	tr := DefaultConfig()
	tr.Iterations, tr.TasksPerIteration, tr.GroupSize = 6, 4, 4
	tr.Hidden, tr.CheckpointEvery = []int{8}, 2
	tr.LearningRate = 0.05
	return toyProject{
		Setup: rollout.Setup{
			Name: "toy", Env: toySource{mk: newToy}, Rewards: []core.RewardFunc{returnReward{}},
			Weights: map[string]float64{"quality": 1}, Rollout: rollout.Config{Workers: workers}, Seed: 42,
		},
		Train: tr, Eval: rollout.Eval{Episodes: 8, Seed: 3},
	}
}
