package writing

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// simLatency is the runtime's default sim latency model:
// 0.8 s + prompt/2000 + completion/40.
func simLatency(prompt, completion int) time.Duration {
	s := 0.8 + float64(prompt)/2000 + float64(completion)/40
	return time.Duration(s * float64(time.Second))
}

// policy picks every agent's decision from the observations.
type policy func(obs []core.Observation) []int

// runEpisode plays one episode the way the runtime does with the sim
// backend: Prompt for every text decision in agent order, then Simulate
// with a per-(seed, step, agent) rng, then Step with the text and usage.
func runEpisode(t testing.TB, env *Env, seed uint64, pol policy) core.StepResult {
	t.Helper()
	obs, err := env.Reset(seed)
	if err != nil {
		t.Fatal(err)
	}
	spec := env.Spec()
	for step := 0; step < spec.MaxSteps; step++ {
		dec := pol(obs)
		acts := make([]core.Action, len(dec))
		for i, d := range dec {
			acts[i].Decision = d
			if !spec.Decisions[d].NeedsText {
				continue
			}
			req := env.Prompt(i, d)
			rng := rand.New(rand.NewPCG(seed, uint64(step)<<8|uint64(i)))
			c, err := env.Simulate(i, d, req, rng)
			if err != nil {
				t.Fatal(err)
			}
			acts[i].Text = c.Text
			acts[i].Usage = core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens,
				Latency: simLatency(c.PromptTokens, c.CompletionTokens), Backend: "sim"}
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
	t.Errorf("seed %d: episode did not end within %d steps", seed, spec.MaxSteps)
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

// goodPolicy is a decentralized policy: each agent decides from its own
// observation features only. Read the house style once, draft the longest
// unclaimed unit, then harmonize peer units known to deviate, re-read when
// peers finished units it has not read, wait while work is in progress,
// and submit.
func goodPolicy(obs []core.Observation) []int {
	out := make([]int, len(obs))
	for i, o := range obs {
		f := o.Features
		legal := func(d int) bool { return o.Legal(d) }
		switch {
		case f[featBusy] > 0 || f[featSubmitted] > 0:
			out[i] = decWait
		case f[featReadStyle] == 0 && legal(decReadStyle):
			out[i] = decReadStyle
		case legal(decDraftLongest):
			out[i] = decDraftLongest
		case f[featKnownDeviating] > 0 && legal(decEditPeer):
			out[i] = decEditPeer
		case f[featUnreadPeer] > 0 && legal(decReadStyle):
			out[i] = decReadStyle
		case f[featInProgress] > 0:
			out[i] = decWait
		default:
			out[i] = decSubmit
		}
	}
	return out
}
