// Package matrix implements the repeated two-player cooperative matrix games
// Climbing and Penalty (Claus & Boutilier 1998; as benchmarked by Papoudakis
// et al. 2021) as a [core.Env] registered under the name "matrix".
//
// Two agents each pick one of three actions ("a0", "a1", "a2") at every step
// for a fixed number of steps (25 by default). Both receive the payoff of the
// joint action, payoff[agent 0's action][agent 1's action]:
//
//	Climbing            Penalty (k ≤ 0)
//	 11  -30    0        k    0   10
//	-30    7    0        0    2    0
//	  0    6    5       10    0    k
//
// The observation is constant: ObsSize 1, the single feature is 1.0, and
// every action is legal (the mask is all true). The game is stateless, so
// Reset ignores its seed. State returns the previous joint action as a
// one-hot over the 9 joint actions (index 3·a0 + a1; all zeros before the
// first step).
//
// Params (env.params): game = "climbing" | "penalty" (default "climbing"),
// k = the penalty value (default -100, any k ≤ 0; only with game = "penalty"),
// steps = episode length (default 25, 1..100000).
//
// On the last step, StepResult.Metrics holds "return" (the team's sum of
// payoffs, counted once, not once per agent; the optimum is 275 on Climbing
// and 250 on Penalty with 25 steps), "optimal_return" (steps × the best
// payoff), "makespan_s" and "reference_makespan_s" (both = steps: one step is
// one virtual second and there is no single-agent way to compare with), and
// "tokens" and "reference_tokens" (both 0: no LLM is involved; reward
// functions treat a zero reference as "do not normalise").
package matrix

import (
	"errors"
	"fmt"

	"github.com/troupe-dev/troupe/core"
)

// Name is the env's registered name ("builtin:matrix").
const Name = "matrix"

// Game names accepted by the "game" param.
const (
	Climbing = "climbing"
	Penalty  = "penalty"
)

// numActions is the number of actions each agent chooses from.
const numActions = 3

// metricOptimalReturn is the env's own metric, reported on the last step
// with the well-known core.MetricReturn, core.MetricMakespan,
// core.MetricReferenceMakespan, core.MetricTokens and
// core.MetricReferenceTokens.
const metricOptimalReturn = "optimal_return"

const (
	defaultSteps = 25
	defaultK     = -100.0
	maxSteps     = 100000
	numAgents    = 2
	stateSize    = numActions * numActions
)

func init() {
	core.RegisterEnv(Name, func(params map[string]any) (core.Env, error) { return New(params) })
}

// Params are the env's parameters as decoded from env.params.
type Params struct {
	// Game is "climbing" or "penalty".
	Game string `json:"game"`
	// K is Penalty's miscoordination payoff; nil means -100. It must be
	// ≤ 0 and is an error with Climbing.
	K *float64 `json:"k"`
	// Steps is the episode length.
	Steps int `json:"steps"`
}

// Env is one instance of the game. It is not safe for concurrent use.
type Env struct {
	spec    core.EnvSpec
	payoff  [numActions][numActions]float64
	steps   int
	optimum float64

	started bool
	done    bool
	t       int
	ret     float64
	last    int // previous joint action 3·a0+a1, or -1
}

// New returns a matrix game configured by params (see the package doc).
func New(params map[string]any) (*Env, error) {
	p := Params{Game: Climbing, Steps: defaultSteps}
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, fmt.Errorf("matrix: %w", err)
	}
	var payoff [numActions][numActions]float64
	switch p.Game {
	case Climbing:
		if p.K != nil {
			return nil, errors.New(`matrix: params: key "k" applies only to game = "penalty"`)
		}
		payoff = [numActions][numActions]float64{{11, -30, 0}, {-30, 7, 0}, {0, 6, 5}}
	case Penalty:
		k := defaultK
		if p.K != nil {
			k = *p.K
		}
		if !(k <= 0) { // also rejects NaN
			return nil, fmt.Errorf("matrix: params: key \"k\": want a value ≤ 0 (e.g. 0, -25, -50, -75, -100), got %v", k)
		}
		payoff = [numActions][numActions]float64{{k, 0, 10}, {0, 2, 0}, {10, 0, k}}
	default:
		return nil, fmt.Errorf("matrix: params: key \"game\": want %q or %q, got %q", Climbing, Penalty, p.Game)
	}
	if p.Steps < 1 || p.Steps > maxSteps {
		return nil, fmt.Errorf("matrix: params: key \"steps\": want 1..%d, got %d", maxSteps, p.Steps)
	}
	best := payoff[0][0]
	for _, row := range payoff {
		for _, v := range row {
			best = max(best, v)
		}
	}
	e := &Env{payoff: payoff, steps: p.Steps, optimum: best * float64(p.Steps), last: -1}
	e.spec = core.EnvSpec{
		Name:         Name,
		Agents:       []string{"agent_0", "agent_1"},
		ObsSize:      1,
		Decisions:    []core.DecisionSpec{{Name: "a0"}, {Name: "a1"}, {Name: "a2"}},
		StateSize:    stateSize,
		StepRewards:  true,
		Capabilities: core.CapTruncate,
		Metrics: []string{core.MetricReturn, metricOptimalReturn, core.MetricMakespan,
			core.MetricReferenceMakespan, core.MetricTokens, core.MetricReferenceTokens},
		MaxSteps: p.Steps,
	}
	return e, nil
}

// Spec describes the env.
func (e *Env) Spec() core.EnvSpec { return e.spec }

// Payoff returns the team payoff of the joint action (a0, a1).
// It panics if an action is outside 0..2.
func (e *Env) Payoff(a0, a1 int) float64 { return e.payoff[a0][a1] }

// Reset starts an episode. The game has no randomness, so seed is unused.
func (e *Env) Reset(seed uint64) ([]core.Observation, error) {
	e.started, e.done = true, false
	e.t, e.ret, e.last = 0, 0, -1
	return observations(), nil
}

// Step plays one joint action: actions[0] is the row, actions[1] the column.
func (e *Env) Step(actions []core.Action) (core.StepResult, error) {
	switch {
	case !e.started:
		return core.StepResult{}, errors.New("matrix: Step before Reset")
	case e.done:
		return core.StepResult{}, errors.New("matrix: Step after the episode ended; call Reset")
	case len(actions) != numAgents:
		return core.StepResult{}, fmt.Errorf("matrix: Step: want %d actions, got %d", numAgents, len(actions))
	}
	for i, a := range actions {
		if a.Decision < 0 || a.Decision >= numActions {
			return core.StepResult{}, fmt.Errorf("matrix: Step: agent %d: decision %d out of range 0..%d", i, a.Decision, numActions-1)
		}
	}
	r := e.payoff[actions[0].Decision][actions[1].Decision]
	e.t++
	e.ret += r
	e.last = actions[0].Decision*numActions + actions[1].Decision
	res := core.StepResult{Observations: observations(), Rewards: []float64{r, r}}
	if e.t >= e.steps {
		e.done = true
		res.Terminated = true
		res.Metrics = e.metrics()
	}
	return res, nil
}

// Truncate ends the episode now and reports the return so far.
func (e *Env) Truncate() (core.StepResult, error) {
	if !e.started {
		return core.StepResult{}, errors.New("matrix: Truncate before Reset")
	}
	e.done = true
	return core.StepResult{Observations: observations(), Rewards: []float64{0, 0},
		Truncated: true, Metrics: e.metrics()}, nil
}

func (e *Env) metrics() map[string]float64 {
	return map[string]float64{
		core.MetricReturn:            e.ret,
		metricOptimalReturn:          e.optimum,
		core.MetricMakespan:          float64(e.t),
		core.MetricReferenceMakespan: float64(e.steps),
		core.MetricTokens:            0,
		core.MetricReferenceTokens:   0,
	}
}

// State returns the previous joint action as a one-hot of length 9
// (index 3·a0 + a1), all zeros before the first step.
func (e *Env) State() []float64 {
	s := make([]float64, stateSize)
	if e.last >= 0 {
		s[e.last] = 1
	}
	return s
}

// Close does nothing; the env holds no resources.
func (e *Env) Close() error { return nil }

// observations returns fresh constant observations, owned by the caller.
func observations() []core.Observation {
	feat := []float64{1, 1}
	mask := []bool{true, true, true, true, true, true}
	return []core.Observation{
		{Features: feat[0:1:1], Mask: mask[0:3:3]},
		{Features: feat[1:2:2], Mask: mask[3:6:6]},
	}
}
