package serve_test

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/sdk/serve"
)

// coin is a one-agent env: guess a coin flip, once.
type coin struct{ side int }

func (c *coin) Spec() core.EnvSpec {
	return core.EnvSpec{
		Name: "coin", Agents: []string{"guesser"}, ObsSize: 1,
		Decisions:   []core.DecisionSpec{{Name: "heads"}, {Name: "tails"}},
		StepRewards: true, Metrics: []string{"return"},
	}
}

func (c *coin) Reset(seed uint64) ([]core.Observation, error) {
	c.side = int(seed % 2)
	return []core.Observation{{Features: []float64{0}}}, nil
}

func (c *coin) Step(a []core.Action) (core.StepResult, error) {
	if len(a) != 1 {
		return core.StepResult{}, fmt.Errorf("coin: want 1 action, got %d", len(a))
	}
	r := 0.0
	if a[0].Decision == c.side {
		r = 1
	}
	return core.StepResult{
		Observations: []core.Observation{{Features: []float64{1}}},
		Rewards:      []float64{r},
		Terminated:   true,
		Metrics:      map[string]float64{"return": r},
	}, nil
}

func (c *coin) State() []float64 { return nil }
func (c *coin) Close() error     { return nil }

// A plugin binary is an ordinary core.Env plus this main function. Build it
// with go build and name it in the agentfile as source = "grpc:PATH".
func Example() {
	serve.Env(func() core.Env { return &coin{} })
}
