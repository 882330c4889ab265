package envtest_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
)

// coinEnv is a one-agent task: guess, three times, the coin drawn from the
// seed. Its feature is the number of guesses made. With forgetful set,
// Reset forgets to reset that count: a bug that only shows in an instance
// that has played before.
type coinEnv struct {
	coin, t   int
	forgetful bool
}

func (e *coinEnv) Spec() core.EnvSpec {
	return core.EnvSpec{
		Name: "coin", Agents: []string{"guesser"}, ObsSize: 1,
		Decisions: []core.DecisionSpec{{Name: "heads"}, {Name: "tails"}},
		Metrics:   []string{core.MetricReturn},
	}
}

func (e *coinEnv) obs() []core.Observation {
	return []core.Observation{{Features: []float64{float64(e.t)}}}
}

func (e *coinEnv) Reset(seed uint64) ([]core.Observation, error) {
	e.coin = rand.New(rand.NewPCG(seed, 0)).IntN(2)
	if !e.forgetful {
		e.t = 0
	}
	return e.obs(), nil
}

func (e *coinEnv) Step(a []core.Action) (core.StepResult, error) {
	e.t++
	res := core.StepResult{Observations: e.obs(), Terminated: e.t >= 3}
	if res.Terminated {
		res.Metrics = map[string]float64{core.MetricReturn: float64(a[0].Decision ^ e.coin ^ 1)}
	}
	return res, nil
}

func (e *coinEnv) State() []float64 { return nil }
func (e *coinEnv) Close() error     { return nil }

// printT prints what Check finds; in a test, pass the *testing.T.
type printT struct{}

func (printT) Helper()                           {}
func (printT) Errorf(format string, args ...any) { fmt.Printf(format+"\n", args...) }

// An env's test checks the env against the contract with the runtime:
//
//	func TestContract(t *testing.T) {
//		src, err := core.NewEnvSource(New, nil)
//		...
//		envtest.Check(t, src)
//	}
func Example() {
	for _, forgetful := range []bool{false, true} {
		src, err := core.NewEnvSource(func(map[string]any) (core.Env, error) {
			return &coinEnv{forgetful: forgetful}, nil
		}, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("forgetful %v:\n", forgetful)
		envtest.Check(printT{}, src)
	}
	// Output:
	// forgetful false:
	// forgetful true:
	// envtest.Check: env coin: seed 1: Reset: agent 0: features differ:
	//  instance 1 [0]
	//  instance 2 [3]
}
