package trainer

import (
	"context"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
)

// The critic's analytic gradient of ½·mean (V − target)² matches central
// finite differences in every parameter.
func TestCriticGradientMatchesFiniteDifferences(t *testing.T) {
	spec := core.EnvSpec{Agents: []string{"a", "b", "c"}, StateSize: 4}
	c, err := newCritic(spec, []int{5, 3}, 1e-3, 7)
	if err != nil {
		t.Fatal(err)
	}
	// Larger weights than the initialisation's, so that tanh bends.
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range c.net.Params() {
		c.net.Params()[i] = rng.NormFloat64() * 0.7
	}
	var agents []int
	var states [][]float64
	var targets []float64
	for r := 0; r < 9; r++ {
		agents = append(agents, r%3)
		states = append(states, []float64{rng.NormFloat64(), rng.NormFloat64(), rng.Float64(), -1})
		targets = append(targets, rng.NormFloat64())
	}
	grad := make([]float64, c.net.NumParams())
	if _, err := c.lossAndGrad(agents, states, targets, grad); err != nil {
		t.Fatal(err)
	}
	loss := func() float64 {
		l, err := c.lossAndGrad(agents, states, targets, make([]float64, c.net.NumParams()))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	const h = 1e-6
	worst := 0.0
	for i := range c.net.Params() {
		p := &c.net.Params()[i]
		old := *p
		*p = old + h
		up := loss()
		*p = old - h
		down := loss()
		*p = old
		num := (up - down) / (2 * h)
		if d := math.Abs(num-grad[i]) / math.Max(1e-4, math.Abs(num)+math.Abs(grad[i])); d > worst {
			worst = d
		}
		if math.Abs(num-grad[i]) > 1e-7+1e-5*math.Abs(num) {
			t.Errorf("parameter %d: analytic %.10g, finite differences %.10g", i, grad[i], num)
		}
	}
	t.Logf("%d parameters, worst relative difference %.2g", c.net.NumParams(), worst)
}

// GAE against a computation by hand, and its two limits.
func TestGAEByHand(t *testing.T) {
	r, v := []float64{0, 0, 1}, []float64{0.5, 0.6, 0.7}
	// γ = 0.9, λ = 0.8 (γλ = 0.72):
	//   δ2 = 1 + 0 − 0.7 = 0.3                A2 = 0.3
	//   δ1 = 0 + 0.9·0.7 − 0.6 = 0.03         A1 = 0.03 + 0.72·0.3 = 0.246
	//   δ0 = 0 + 0.9·0.6 − 0.5 = 0.04         A0 = 0.04 + 0.72·0.246 = 0.21712
	adv, ret := gae(r, v, 0.9, 0.8)
	want := []float64{0.21712, 0.246, 0.3}
	for i := range want {
		if math.Abs(adv[i]-want[i]) > 1e-12 || math.Abs(ret[i]-(want[i]+v[i])) > 1e-12 {
			t.Errorf("step %d: A %.12g, target %.12g; want %.12g, %.12g", i, adv[i], ret[i], want[i], want[i]+v[i])
		}
	}
	// λ = 1, γ = 1: the return to go minus the value.
	adv, _ = gae(r, v, 1, 1)
	for i, w := range []float64{0.5, 0.4, 0.3} {
		if math.Abs(adv[i]-w) > 1e-12 {
			t.Errorf("γ = λ = 1, step %d: A %v, want %v", i, adv[i], w)
		}
	}
	// λ = 0: the one-step TD error.
	adv, _ = gae(r, v, 0.9, 0)
	for i, w := range []float64{0.04, 0.03, 0.3} {
		if math.Abs(adv[i]-w) > 1e-12 {
			t.Errorf("λ = 0, step %d: A %v, want %v", i, adv[i], w)
		}
	}
}

// The step rewards add up to the joint reward: what the reward functions
// add beyond the env's per-step rewards is paid at the last step.
func TestStepRewardsAddUpToTheJointReward(t *testing.T) {
	r := rollout.EpisodeResult{Reward: 1.3, TeamRewards: []float64{0, 0.5, 0.25}}
	r.Episode.Steps = 3
	if got, want := stepRewards(&r), []float64{0, 0.5, 0.8}; !close(got, want) {
		t.Errorf("with per-step rewards: %v, want %v", got, want)
	}
	r.TeamRewards = nil // an env without per-step rewards
	if got, want := stepRewards(&r), []float64{0, 0, 1.3}; !close(got, want) {
		t.Errorf("without: %v, want %v", got, want)
	}
}

func close(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-12 {
			return false
		}
	}
	return true
}

func valueSetup(workers int) toyProject {
	s := toySetup(workers)
	s.Train.Credit = CreditValue
	s.Train.ValueHidden = []int{8}
	return s
}

// Value-credit training is the same, to the bit, on 1 worker and on 3.
func TestValueCreditSameOnWorkers(t *testing.T) {
	a := sameOnWorkers(t, valueSetup)
	if !strings.Contains(a[0], `"value_loss"`) {
		t.Errorf("metrics.jsonl lacks value_loss: %s", a[0])
	}
}

// An interrupted and resumed value-credit run ends as the uninterrupted
// one: the critic and its Adam state are in the checkpoint.
func TestValueCreditResumeEqualsUninterrupted(t *testing.T) {
	resumeEquals(t, valueSetup, func(part string) {
		crit, _ := filepath.Glob(filepath.Join(part, "checkpoint", "critic-*.safetensors"))
		if len(crit) != 1 || filepath.Base(crit[0]) != "critic-000003.safetensors" {
			t.Fatalf("checkpoint critic files %v, want critic-000003.safetensors", crit)
		}
	})
}

// A critic of another architecture is refused on resume, naming the key.
func TestValueCreditResumeChecksArchitecture(t *testing.T) {
	dir := t.TempDir()
	s := valueSetup(1)
	s.Train.Iterations = 2
	if err := train(t, s, dir, false, context.Background()); err != nil {
		t.Fatal(err)
	}
	s.Train.ValueHidden, s.Train.Iterations = []int{4}, 3
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if err := tr.Run(context.Background(), RunOptions{Out: dir, Resume: true}); err == nil || !strings.Contains(err.Error(), "value_hidden") {
		t.Fatalf("resume with another critic: %v, want an error naming value_hidden", err)
	}
}

// With value credit the toy team learns to score, as with joint credit.
func TestValueCreditLearns(t *testing.T) {
	s := valueSetup(2)
	s.Train.Iterations = 25
	_, last := learns(t, s)
	if last.ValueLoss == 0 {
		t.Errorf("value_loss is 0: the critic was not evaluated")
	}
}

// fit regresses the critic onto a function of the state and the agent.
func TestCriticFits(t *testing.T) {
	spec := core.EnvSpec{Agents: []string{"a", "b"}, StateSize: 2}
	c, err := newCritic(spec, []int{16}, 1e-2, 3)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	var agents []int
	var states [][]float64
	var targets []float64
	for r := 0; r < 200; r++ {
		x, y := rng.Float64()*2-1, rng.Float64()*2-1
		agents, states = append(agents, r%2), append(states, []float64{x, y})
		targets = append(targets, x*y+float64(r%2)) // the agent's one-hot matters
	}
	before, _ := c.lossAndGrad(agents, states, targets, make([]float64, c.net.NumParams()))
	if err := c.fit(agents, states, targets, 300, 4, 1, rng); err != nil {
		t.Fatal(err)
	}
	after, _ := c.lossAndGrad(agents, states, targets, make([]float64, c.net.NumParams()))
	if after > 0.05*before {
		t.Fatalf("loss %.4g -> %.4g: the critic did not fit", before, after)
	}
}

// statelessToy declares no global state.
type statelessToy struct{ *toyEnv }

func (e statelessToy) Spec() core.EnvSpec {
	s := e.toyEnv.Spec()
	s.StateSize = 0
	return s
}

// An env without a global state is refused with credit = value, saying why.
func TestValueCreditNeedsState(t *testing.T) {
	s := valueSetup(1)
	s.Setup.Env = statelessSource{}
	_, err := New(s.Setup, s.Train)
	if err == nil || !strings.Contains(err.Error(), `credit = "value"`) || !strings.Contains(err.Error(), "StateSize is 0") || !strings.Contains(err.Error(), `"toy"`) {
		t.Fatalf("got %v, want an error naming credit = \"value\", the env and its StateSize 0", err)
	}
}

type statelessSource struct{}

func (statelessSource) Spec() core.EnvSpec      { return statelessToy{newToy()}.Spec() }
func (statelessSource) Open() (core.Env, error) { return statelessToy{newToy()}, nil }
func (statelessSource) Close() error            { return nil }

// The value settings are checked, each naming its key.
func TestValueSettings(t *testing.T) {
	for _, c := range []struct {
		key string
		set func(*Config)
	}{
		{"gamma", func(c *Config) { c.Gamma = 1.5 }},
		{"gamma", func(c *Config) { c.Gamma = math.NaN() }},
		{"gae_lambda", func(c *Config) { c.GAELambda = -0.1 }},
		{"value_learning_rate", func(c *Config) { c.ValueLearningRate = 0 }},
		{"value_epochs", func(c *Config) { c.ValueEpochs = 0 }},
		{"value_hidden", func(c *Config) { c.ValueHidden = []int{0} }},
	} {
		cfg := DefaultConfig()
		cfg.Credit = CreditValue
		c.set(&cfg)
		err := cfg.Validate()
		var se *core.SettingError
		if err == nil || !asSetting(err, &se) || se.Key != c.key {
			t.Errorf("%s: got %v, want a SettingError for %q", c.key, err, c.key)
		}
	}
	cfg := DefaultConfig()
	cfg.Credit, cfg.GroupSize = CreditValue, 1
	if err := cfg.Validate(); err != nil {
		t.Errorf("group_size 1 with credit = value: %v, want it allowed (the critic is the baseline)", err)
	}
}

func asSetting(err error, se **core.SettingError) bool {
	s, ok := err.(*core.SettingError)
	*se = s
	return ok
}

// wrongStateToy returns a state of the wrong length.
type wrongStateToy struct{ *toyEnv }

func (e wrongStateToy) State() []float64 { return []float64{1, 2} }

type wrongStateSource struct{}

func (wrongStateSource) Spec() core.EnvSpec      { return newToy().Spec() }
func (wrongStateSource) Open() (core.Env, error) { return wrongStateToy{newToy()}, nil }
func (wrongStateSource) Close() error            { return nil }

// A state of the wrong length stops the iteration with an error naming the
// env, the step and both lengths.
func TestValueCreditChecksStateLength(t *testing.T) {
	s := valueSetup(1)
	s.Setup.Env = wrongStateSource{}
	tr, err := New(s.Setup, s.Train)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	_, _, err = tr.Step(context.Background())
	if err == nil || !strings.Contains(err.Error(), "State() returned 2 values, its spec's StateSize is 1") || !strings.Contains(err.Error(), "env toy") {
		t.Fatalf("got %v, want the state-length error", err)
	}
}
