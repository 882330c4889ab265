package writing

import (
	"math/rand/v2"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

// policy picks every agent's decision from the observations.
type policy func(obs []core.Observation) []int

// runEpisode plays one episode the way the runtime does with the sim
// backend: Prompt for every text decision in agent order, then Simulate
// with a per-(seed, step, agent) rng, then Step with the text and usage
// (Backend "sim": the env times the call by the writer's tier).
func runEpisode(t testing.TB, env *Env, seed uint64, pol policy) core.StepResult {
	t.Helper()
	return runEpisodeLLM(t, env, seed, 0, pol)
}

// runEpisodeLLM is runEpisode with the simulated LLM's random numbers
// drawn from another stream (llm = 0 is runEpisode's): the same task
// (RFC, team, rate limit, house style) written by another sample of the
// writers.
func runEpisodeLLM(t testing.TB, env *Env, seed, llm uint64, pol policy) core.StepResult {
	t.Helper()
	obs, err := env.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	spec := env.Spec()
	const maxSteps = 1000 // the runtime's default step limit
	for step := 0; step < maxSteps; step++ {
		dec := pol(obs)
		acts := make([]core.Action, len(dec))
		for i, d := range dec {
			acts[i].Decision = d
			if !spec.Decisions[d].NeedsText {
				continue
			}
			req := env.Prompt(i, d)
			rng := rand.New(rand.NewPCG(seed^llm*0x9e3779b97f4a7c15, uint64(step)<<8|uint64(i)))
			c, err := env.Simulate(i, d, req, rng)
			if err != nil {
				t.Fatal(err)
			}
			acts[i].Text = c.Text
			acts[i].Usage = core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Backend: "sim"}
		}
		res, err := env.Step(acts)
		if err != nil {
			t.Fatalf("seed %d step %d: %v", seed, step, err)
		}
		if res.Done() {
			return res
		}
		obs = res.Observations
	}
	res, err := env.Truncate()
	if err != nil {
		t.Fatal(err)
	}
	t.Errorf("seed %d: episode did not end within %d steps", seed, maxSteps)
	return res
}

func baselinePolicy(t testing.TB, env *Env, name string) policy {
	b, err := env.Baseline(name)
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

// featurePolicyOf plays a per-agent rule on every agent's own
// observation.
func featurePolicyOf(rule featurePolicy) policy {
	return func(obs []core.Observation) []int {
		d, _ := rule.Act(obs)
		return d
	}
}
