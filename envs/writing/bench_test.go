package writing

import (
	"math/rand/v2"
	"testing"

	"github.com/troupe-dev/troupe/core"
)

func BenchmarkNew(b *testing.B) {
	for b.Loop() {
		if _, err := New(nil); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReset(b *testing.B) {
	e, _ := New(nil)
	s := uint64(0)
	for b.Loop() {
		s++
		e.Reset(s)
	}
}

// BenchmarkEpisode plays whole parallel_naive episodes with the sim
// surrogate (Prompt, Simulate, Step), as the runtime would.
func BenchmarkEpisode(b *testing.B) {
	e, _ := New(nil)
	pol, _ := e.Baseline(BaselineParallelNaive)
	seed := uint64(0)
	steps := 0
	for b.Loop() {
		seed++
		obs, _ := e.Reset(seed)
		for {
			dec, err := pol.Act(obs)
			if err != nil {
				b.Fatal(err)
			}
			acts := make([]core.Action, len(dec))
			for i, d := range dec {
				acts[i].Decision = d
				if decisionSpecs[d].NeedsText {
					c, _ := e.Simulate(i, d, e.Prompt(i, d), rand.New(rand.NewPCG(seed, uint64(i))))
					acts[i].Text = c.Text
					acts[i].Usage = core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Backend: "sim"}
				}
			}
			res, err := e.Step(acts)
			if err != nil {
				b.Fatal(err)
			}
			steps++
			if res.Done() {
				break
			}
			obs = res.Observations
		}
	}
	b.ReportMetric(float64(steps)/float64(b.N), "steps/episode")
}
