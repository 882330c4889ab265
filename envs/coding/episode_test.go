package coding

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// simLatency is the sim backend's latency model with its defaults.
func simLatency(c core.SimCompletion) time.Duration {
	s := 0.8 + float64(c.PromptTokens)/2000 + float64(c.CompletionTokens)/40
	return time.Duration(s * float64(time.Second))
}

// policy picks every agent's decision from the observations.
type policy func(obs []core.Observation) []int

// playEpisode runs one episode the way the runtime does with the sim
// backend: decisions from the policy, then Prompt for every text decision in
// agent order, then Simulate in agent order with a seeded rng, then Step.
func playEpisode(t testing.TB, e *Env, seed uint64, pol policy) core.StepResult {
	t.Helper()
	obs, err := e.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	for step := 0; ; step++ {
		acts := pol(obs)
		actions := make([]core.Action, len(acts))
		reqs := make([]core.ChatRequest, len(acts))
		for i, d := range acts {
			actions[i].Decision = d
			if decisionSpecs[d].NeedsText {
				reqs[i] = e.Prompt(i, d)
			}
		}
		for i, d := range acts {
			if !decisionSpecs[d].NeedsText {
				continue
			}
			rng := rand.New(rand.NewPCG(seed, uint64(step)<<8|uint64(i)))
			c, err := e.Simulate(i, d, reqs[i], rng)
			if err != nil {
				t.Fatal(err)
			}
			actions[i].Text = c.Text
			actions[i].Usage = core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Latency: simLatency(c), Backend: "sim"}
		}
		res, err := e.Step(actions)
		if err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		if res.Done() {
			return res
		}
		obs = res.Observations
	}
}

// featurePolicy is the simple decentralized policy the env is calibrated
// for: each agent, from its own features only, repairs its failing function
// (while fewer than maxRepairs repairs were tried on it), else runs the
// examples of its untested code, else implements the next unclaimed
// function, else submits. Finishing its own function before claiming the
// next one balances the load: an agent stuck repairing claims less.
func featurePolicy(maxRepairs int) policy {
	return func(obs []core.Observation) []int {
		acts := make([]int, len(obs))
		for i, o := range obs {
			x := o.Features
			switch {
			case x[featFree] == 0:
				acts[i] = decWait
			case x[featCanRepair] == 1 && x[featRepairs]*4 < float64(maxRepairs):
				acts[i] = decRepair
			case x[featCanTest] == 1:
				acts[i] = decRunTests
			case x[featAnyUnclaimed] == 1:
				acts[i] = decImplement
			default:
				acts[i] = decSubmit
			}
			if !o.Legal(acts[i]) {
				acts[i] = decWait
			}
		}
		return acts
	}
}

// policyRepairs is the repair bound of the calibrated feature policy.
const policyRepairs = 3

func baselinePolicy(t testing.TB, e *Env, name string) policy {
	b, err := e.Baseline(name)
	if err != nil {
		t.Fatal(err)
	}
	return func(obs []core.Observation) []int {
		d, err := b.Act(obs)
		if err != nil {
			t.Fatalf("baseline %s: %v", name, err)
		}
		return d
	}
}
