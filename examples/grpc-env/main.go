// Command grpc-env is a troupe environment plugin written as a third party
// would write one: an ordinary core.Env, made a go-plugin binary by the
// serve kit. Build it and name it in an agentfile:
//
//	go build -o relay ./examples/grpc-env
//
//	[env]
//	source = "grpc:./relay"
//	sha256 = "…"              # optional: pin the binary (sha256sum relay)
//	[env.sandbox]
//	call_timeout = "2s"       # optional: bound every call (default 10s)
//	[env.params]
//	length = 6
//
// The task, "relay": a baton must travel down a track of `length` cells.
// Each of two runners covers its own half. At every step each runner may
// "rest" or "run"; a runner that runs while holding the baton carries it one
// cell (the first runner holds it until the middle, the second after it).
// Running without the baton wastes effort. The episode ends when the baton
// reaches the end or after 4·length steps. Both runners get +1 per cell the
// baton advances and −0.1 for every wasted run; the metrics say how long the
// relay took against the fastest possible.
package main

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/sdk/serve"
)

func main() {
	serve.EnvWithParams(func(params map[string]any) (core.Env, error) { return newRelay(params) })
}

// params are the env's parameters (env.params).
type params struct {
	// Length is the number of cells the baton travels (2..1000, even).
	Length int `json:"length"`
}

// relay is the env.
type relay struct {
	p      params
	baton  int // cells covered so far
	steps  int
	wasted int
}

const (
	rest = iota
	run
)

func newRelay(raw map[string]any) (*relay, error) {
	p := params{Length: 6}
	if err := core.DecodeParams(raw, &p); err != nil {
		return nil, err
	}
	if p.Length < 2 || p.Length > 1000 || p.Length%2 != 0 {
		return nil, fmt.Errorf("params: length must be an even number in 2..1000, got %d", p.Length)
	}
	return &relay{p: p}, nil
}

func (r *relay) Spec() core.EnvSpec {
	return core.EnvSpec{
		Name:        "relay",
		Agents:      []string{"first", "second"},
		ObsSize:     2,
		Decisions:   []core.DecisionSpec{{Name: "rest"}, {Name: "run"}},
		StateSize:   2,
		StepRewards: true,
		Metrics:     []string{"return", "makespan_s", "reference_makespan_s", "tokens", "reference_tokens"},
		MaxSteps:    4 * r.p.Length,
	}
}

// holder returns the runner holding the baton.
func (r *relay) holder() int {
	if r.baton < r.p.Length/2 {
		return 0
	}
	return 1
}

// observations: each runner sees the baton's progress and whether it holds it.
func (r *relay) observations() []core.Observation {
	obs := make([]core.Observation, 2)
	progress := float64(r.baton) / float64(r.p.Length)
	for i := range obs {
		holds := 0.0
		if r.holder() == i {
			holds = 1
		}
		obs[i] = core.Observation{
			Features: []float64{progress, holds},
			Text:     fmt.Sprintf("You are runner %d. The baton is at cell %d of %d.", i+1, r.baton, r.p.Length),
		}
	}
	return obs
}

func (r *relay) Reset(uint64) ([]core.Observation, error) {
	r.baton, r.steps, r.wasted = 0, 0, 0
	return r.observations(), nil
}

func (r *relay) Step(actions []core.Action) (core.StepResult, error) {
	if len(actions) != 2 {
		return core.StepResult{}, fmt.Errorf("relay: want 2 actions, got %d", len(actions))
	}
	reward := 0.0
	h := r.holder()
	for i, a := range actions {
		switch a.Decision {
		case rest:
		case run:
			if i != h {
				r.wasted++
				reward -= 0.1
			}
		default:
			return core.StepResult{}, fmt.Errorf("relay: agent %d: decision %d out of range 0..1", i, a.Decision)
		}
	}
	if actions[h].Decision == run {
		r.baton++
		reward++
	}
	r.steps++
	res := core.StepResult{
		Observations: r.observations(),
		Rewards:      []float64{reward, reward},
		Terminated:   r.baton == r.p.Length,
		Truncated:    r.baton < r.p.Length && r.steps >= 4*r.p.Length,
	}
	if res.Done() {
		res.Metrics = map[string]float64{
			"return":               float64(r.baton) - 0.1*float64(r.wasted),
			"makespan_s":           float64(r.steps),
			"reference_makespan_s": float64(r.p.Length),
			"tokens":               0,
			"reference_tokens":     0,
		}
	}
	return res, nil
}

func (r *relay) State() []float64 {
	return []float64{float64(r.baton) / float64(r.p.Length), float64(r.steps) / float64(4*r.p.Length)}
}

func (r *relay) Close() error { return nil }
