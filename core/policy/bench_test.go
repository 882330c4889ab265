package policy

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchConfig is the default MLP: obs 32, hidden [64, 64], 8 decisions,
// 4 agents, one shared network.
var benchConfig = Config{ObsSize: 32, NumDecisions: 8, NumAgents: 4, Hidden: []int{64, 64}, Shared: true, Seed: 1}

// flops of one row through benchConfig: forward 2·Σ in·out; backward adds
// the weight gradients (same count) and the input gradients of layers ≥ 1.
const (
	benchFwdFlops = 2 * (36*64 + 64*64 + 64*8)
	benchBwdFlops = benchFwdFlops + 2*(64*64+64*8)
)

func benchBatch(m int) ([]int, [][]float64) {
	rng := rand.New(rand.NewPCG(1, 1))
	agents := make([]int, m)
	obs := make([][]float64, m)
	for r := range obs {
		agents[r] = r % 4
		obs[r] = randObs(rng, 32)
	}
	return agents, obs
}

// BenchmarkLogProbs is the rollout path: one decision at a time.
func BenchmarkLogProbs(b *testing.B) {
	p, _ := New(benchConfig)
	_, obs := benchBatch(64)
	dst := make([]float64, 8)
	b.ResetTimer()
	for i := range b.N {
		if err := p.LogProbs(i%4, obs[i%64], nil, dst); err != nil {
			b.Fatal(err)
		}
	}
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(b.N)/s, "decisions/s")
	b.ReportMetric(float64(b.N)*benchFwdFlops/s/1e9, "GFLOP/s")
}

// BenchmarkForward is batched Forward + LogSoftmax per row.
func BenchmarkForward(b *testing.B) {
	for _, m := range []int{1, 64, 1024} {
		b.Run(fmt.Sprintf("batch=%d", m), func(b *testing.B) {
			p, _ := New(benchConfig)
			agents, obs := benchBatch(m)
			var ws Workspace
			lp := make([]float64, 8)
			b.ResetTimer()
			for range b.N {
				z, err := p.Forward(&ws, agents, obs)
				if err != nil {
					b.Fatal(err)
				}
				for r := 0; r < m; r++ {
					LogSoftmax(z[r*8:(r+1)*8], nil, lp)
				}
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N*m)/s, "decisions/s")
			b.ReportMetric(float64(b.N*m)*benchFwdFlops/s/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkForwardBackward is one training pass: Forward then Backward.
func BenchmarkForwardBackward(b *testing.B) {
	for _, m := range []int{1, 64, 1024} {
		b.Run(fmt.Sprintf("batch=%d", m), func(b *testing.B) {
			p, _ := New(benchConfig)
			agents, obs := benchBatch(m)
			var ws Workspace
			dz := make([]float64, m*8)
			for i := range dz {
				dz[i] = float64(i%5) * 0.01
			}
			grad := make([]float64, p.NumParams())
			b.ResetTimer()
			for range b.N {
				if _, err := p.Forward(&ws, agents, obs); err != nil {
					b.Fatal(err)
				}
				if err := p.Backward(&ws, dz, grad); err != nil {
					b.Fatal(err)
				}
			}
			s := b.Elapsed().Seconds()
			b.ReportMetric(float64(b.N*m)/s, "decisions/s")
			b.ReportMetric(float64(b.N*m)*(benchFwdFlops+benchBwdFlops)/s/1e9, "GFLOP/s")
		})
	}
}

var sink float64

// BenchmarkDotLoop is a plain Go float64 dot product (length 64, one
// accumulator), the baseline for "GFLOP/s achieved": compare with the
// forward/backward GFLOP/s figures and with the CPU's peak.
func BenchmarkDotLoop(b *testing.B) {
	x := make([]float64, 64)
	y := make([]float64, 64)
	for i := range x {
		x[i], y[i] = float64(i)*0.5, 1/float64(i+1)
	}
	b.ResetTimer()
	var s float64
	for range b.N {
		for i, v := range x {
			s += v * y[i]
		}
	}
	sink = s
	b.ReportMetric(float64(b.N)*2*64/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkGemmNT is the blocked kernel alone on a 256×64×64 product.
func BenchmarkGemmNT(b *testing.B) {
	const m, n, k = 256, 64, 64
	a, bb, c := make([]float64, m*k), make([]float64, n*k), make([]float64, m*n)
	for i := range a {
		a[i] = float64(i%7) * 0.1
	}
	for i := range bb {
		bb[i] = float64(i%5) * 0.1
	}
	b.ResetTimer()
	for range b.N {
		gemmNT(m, n, k, a, bb, c)
	}
	b.ReportMetric(float64(b.N)*2*m*n*k/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}
