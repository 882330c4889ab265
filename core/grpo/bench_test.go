package grpo

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/troupe-dev/troupe/core/policy"
)

// BenchmarkUpdate times one Update (4 epochs × 4 minibatches, KL > 0) of the
// default MLP (obs 32, hidden [64, 64], 8 decisions, 4 agents, shared) on
// batches of 5k and 20k decisions, the range a training iteration sees.
func BenchmarkUpdate(b *testing.B) {
	for _, n := range []int{5000, 20000} {
		b.Run(fmt.Sprintf("decisions=%d", n), func(b *testing.B) {
			pcfg := policy.Config{ObsSize: 32, NumDecisions: 8, NumAgents: 4, Hidden: []int{64, 64}, Shared: true, Seed: 1}
			p, _ := policy.New(pcfg)
			batch := randomBatch(b, p, n, 1)
			cfg := DefaultConfig()
			cfg.KL = 0.05
			o, _ := NewOptimizer(p, cfg)
			rng := rand.New(rand.NewPCG(1, 1))
			b.ResetTimer()
			for range b.N {
				if _, err := o.Update(batch, rng); err != nil {
					b.Fatal(err)
				}
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N*n*cfg.Epochs)/s, "decision-passes/s")
			b.ReportMetric(s/float64(b.N)*1000, "ms/update")
		})
	}
}
