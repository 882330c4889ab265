package bench

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/envs/writing"
)

// PolicyRow is one pass of the policy at one batch size.
type PolicyRow struct {
	// Pass is "logprobs" (the rollout path: one decision, pooled scratch),
	// "forward" (batched Forward + LogSoftmax per row) or
	// "forward+backward" (one training pass).
	Pass            string  `json:"pass"`
	Batch           int     `json:"batch"`
	DecisionsPerSec float64 `json:"decisions_per_sec"`
	GFLOPS          float64 `json:"gflops"`
	// PctOfPeak is GFLOPS ÷ PolicyResult.PeakGFLOPS × 100.
	PctOfPeak   float64 `json:"pct_of_peak"`
	AllocsPerOp float64 `json:"allocs_per_op"` // per call (one batch)
}

// DotRow is one plain Go dot-product loop.
type DotRow struct {
	Name   string  `json:"name"`
	Length int     `json:"length"`
	GFLOPS float64 `json:"gflops"`
}

// PolicyResult is the policy section.
type PolicyResult struct {
	// Config is the MLP measured: the default project's (writing, five
	// writers) with the default hidden layers, one shared network.
	Config policy.Config `json:"config"`
	// FwdFlops and BwdFlops are the floating-point operations of one row
	// forward, and of the backward pass alone (weight gradients plus the
	// input gradients of every layer but the first).
	FwdFlops float64 `json:"fwd_flops_per_row"`
	BwdFlops float64 `json:"bwd_flops_per_row"`
	// Dot holds the plain Go dot-product loops; PeakGFLOPS is the best of
	// them, the single-core reference for "achieved".
	Dot        []DotRow    `json:"dot"`
	PeakGFLOPS float64     `json:"peak_gflops"`
	Rows       []PolicyRow `json:"rows"`
	// Parallel runs loops on every core at once, one instance per core:
	// the ceiling of multi-worker scaling for compute-bound work here.
	Parallel []ParallelRow `json:"parallel"`
	Load1    float64       `json:"load1"`
}

// ParallelRow is one loop run on Goroutines cores at once.
type ParallelRow struct {
	Name       string `json:"name"`
	Goroutines int    `json:"goroutines"`
	// Scaling is the aggregate throughput ÷ the throughput of one
	// instance alone (ideal: Goroutines).
	Scaling float64 `json:"scaling"`
}

// ParallelWorkload runs p instances of a workload (each made by mk, with
// its own buffers) at once, each doing n operations; Timing.N counts one
// instance's operations, so p × N ÷ Elapsed is the aggregate rate.
func ParallelWorkload(p int, mk func() Workload) Workload {
	ws := make([]Workload, p)
	for i := range ws {
		ws[i] = mk()
	}
	return func(_ Timer, n int) error {
		errs := make([]error, p)
		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = w(nopTimer{}, n)
			}()
		}
		wg.Wait()
		return errors.Join(errs...)
	}
}

// nopTimer is the Timer of the instances of a ParallelWorkload: they run
// inside one timed region.
type nopTimer struct{}

func (nopTimer) StartTimer() {}
func (nopTimer) StopTimer()  {}

// DefaultPolicyConfig is the MLP of the default project: the writing env's
// observation, decisions and agents (five writers), the default hidden
// layers [64, 64], one network shared by all agents.
func DefaultPolicyConfig() (policy.Config, error) {
	e, err := writing.New(WritingStepParams())
	if err != nil {
		return policy.Config{}, err
	}
	spec := e.Spec()
	return policy.Config{ObsSize: spec.ObsSize, NumDecisions: len(spec.Decisions), NumAgents: spec.NumAgents(),
		Hidden: []int{64, 64}, Shared: true, Seed: 1}, nil
}

// Flops returns the forward flops of one row and the backward-only flops.
func Flops(c policy.Config) (fwd, bwd float64) {
	sizes := append([]int{c.InputSize()}, c.Hidden...)
	sizes = append(sizes, c.NumDecisions)
	for l := 0; l+1 < len(sizes); l++ {
		mac := float64(sizes[l] * sizes[l+1])
		fwd += 2 * mac
		bwd += 2 * mac // weight gradient
		if l > 0 {
			bwd += 2 * mac // input gradient
		}
	}
	return fwd, bwd
}

// dotSink keeps the dot products' results alive; atomic, because a
// ParallelWorkload runs several dot loops at once.
var dotSink atomic.Uint64

// DotWorkload is a plain Go float64 dot product of two length-n vectors
// (n a multiple of 8) with acc independent accumulators (1, 4 or 8); one
// op is one product.
func DotWorkload(n, acc int) Workload {
	x, y := make([]float64, n), make([]float64, n)
	for i := range x {
		x[i], y[i] = float64(i)*0.5, 1/float64(i+1)
	}
	if acc == 1 {
		return func(_ Timer, reps int) error {
			var s float64
			for range reps {
				for i, v := range x {
					s += v * y[i]
				}
			}
			dotSink.Store(math.Float64bits(s))
			return nil
		}
	}
	if acc == 8 {
		return func(_ Timer, reps int) error {
			var s0, s1, s2, s3, s4, s5, s6, s7 float64
			for range reps {
				for i := 0; i+7 < len(x); i += 8 {
					xs, ys := x[i:i+8:i+8], y[i:i+8:i+8]
					s0 += xs[0] * ys[0]
					s1 += xs[1] * ys[1]
					s2 += xs[2] * ys[2]
					s3 += xs[3] * ys[3]
					s4 += xs[4] * ys[4]
					s5 += xs[5] * ys[5]
					s6 += xs[6] * ys[6]
					s7 += xs[7] * ys[7]
				}
			}
			dotSink.Store(math.Float64bits(s0 + s1 + s2 + s3 + s4 + s5 + s6 + s7))
			return nil
		}
	}
	return func(_ Timer, reps int) error {
		var s0, s1, s2, s3 float64
		for range reps {
			for i := 0; i+3 < len(x); i += 4 {
				s0 += x[i] * y[i]
				s1 += x[i+1] * y[i+1]
				s2 += x[i+2] * y[i+2]
				s3 += x[i+3] * y[i+3]
			}
		}
		dotSink.Store(math.Float64bits(s0 + s1 + s2 + s3))
		return nil
	}
}

// policyBatch returns m rows of random observations, agents in turn.
func policyBatch(c policy.Config, m int) ([]int, [][]float64) {
	rng := rand.New(rand.NewPCG(1, 1))
	agents := make([]int, m)
	obs := make([][]float64, m)
	for r := range obs {
		agents[r] = r % c.NumAgents
		obs[r] = make([]float64, c.ObsSize)
		for j := range obs[r] {
			obs[r][j] = rng.Float64()*2 - 1
		}
	}
	return agents, obs
}

// LogProbsWorkload is the rollout path: one LogProbs call per op.
func LogProbsWorkload(p *policy.Policy) Workload {
	c := p.Config()
	agents, obs := policyBatch(c, 64)
	dst := make([]float64, c.NumDecisions)
	return func(_ Timer, n int) error {
		for i := range n {
			if err := p.LogProbs(agents[i%64], obs[i%64], nil, dst); err != nil {
				return err
			}
		}
		return nil
	}
}

// ForwardWorkload is one batched Forward of m rows plus LogSoftmax of
// each row per op.
func ForwardWorkload(p *policy.Policy, m int) Workload {
	c := p.Config()
	agents, obs := policyBatch(c, m)
	var ws policy.Workspace
	lp := make([]float64, c.NumDecisions)
	k := c.NumDecisions
	return func(_ Timer, n int) error {
		for range n {
			z, err := p.Forward(&ws, agents, obs)
			if err != nil {
				return err
			}
			for r := range m {
				if err := policy.LogSoftmax(z[r*k:(r+1)*k], nil, lp); err != nil {
					return err
				}
			}
		}
		return nil
	}
}

// ForwardBackwardWorkload is one Forward and one Backward of m rows per op.
func ForwardBackwardWorkload(p *policy.Policy, m int) Workload {
	c := p.Config()
	agents, obs := policyBatch(c, m)
	var ws policy.Workspace
	dz := make([]float64, m*c.NumDecisions)
	for i := range dz {
		dz[i] = float64(i%5) * 0.01
	}
	grad := make([]float64, p.NumParams())
	return func(_ Timer, n int) error {
		for range n {
			if _, err := p.Forward(&ws, agents, obs); err != nil {
				return err
			}
			if err := p.Backward(&ws, dz, grad); err != nil {
				return err
			}
		}
		return nil
	}
}

// PolicyBatches are the batch sizes measured.
var PolicyBatches = []int{1, 64, 1024}

func runPolicy(ctx context.Context, o *Options) (PolicyResult, error) {
	cfg, err := DefaultPolicyConfig()
	if err != nil {
		return PolicyResult{}, err
	}
	res := PolicyResult{Config: cfg, Load1: load1()}
	res.FwdFlops, res.BwdFlops = Flops(cfg)
	reps := o.pick(1, 3)
	for _, d := range []struct {
		name string
		acc  int
	}{{"dot, 1 accumulator", 1}, {"dot, 4 accumulators", 4}, {"dot, 8 accumulators", 8}} {
		const n = 256
		t, err := MeasureMedian(o.dur(), reps, DotWorkload(n, d.acc))
		if err != nil {
			return res, err
		}
		g := t.OpsPerSec() * 2 * n / 1e9
		res.Dot = append(res.Dot, DotRow{Name: d.name, Length: n, GFLOPS: g})
		res.PeakGFLOPS = max(res.PeakGFLOPS, g)
		o.logf("policy %-22s %6.2f GFLOP/s", d.name, g)
	}
	p, err := policy.New(cfg)
	if err != nil {
		return res, err
	}
	// The parallel ceiling first, right after the single-core peak, so both
	// see about the same machine.
	if g := runtime.GOMAXPROCS(0); g > 1 {
		for _, pw := range []struct {
			name string
			mk   func() Workload
		}{
			{"dot, 4 accumulators", func() Workload { return DotWorkload(256, 4) }},
			{"forward+backward, batch 1024", func() Workload { return ForwardBackwardWorkload(p, 1024) }},
		} {
			one, err := MeasureMedian(o.dur(), reps, pw.mk())
			if err != nil {
				return res, err
			}
			all, err := MeasureMedian(o.dur(), reps, ParallelWorkload(g, pw.mk))
			if err != nil {
				return res, err
			}
			row := ParallelRow{Name: pw.name, Goroutines: g, Scaling: float64(g) * all.OpsPerSec() / one.OpsPerSec()}
			o.logf("policy parallel %-28s on %d cores: ×%.2f of one core", pw.name, g, row.Scaling)
			res.Parallel = append(res.Parallel, row)
		}
	}
	add := func(pass string, m int, flopsPerRow float64, w Workload) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		t, err := MeasureMedian(o.dur(), reps, w)
		if err != nil {
			return fmt.Errorf("policy %s batch %d: %w", pass, m, err)
		}
		dps := t.OpsPerSec() * float64(m)
		row := PolicyRow{Pass: pass, Batch: m, DecisionsPerSec: dps, GFLOPS: dps * flopsPerRow / 1e9, AllocsPerOp: t.AllocsPerOp()}
		if res.PeakGFLOPS > 0 {
			row.PctOfPeak = 100 * row.GFLOPS / res.PeakGFLOPS
		}
		o.logf("policy %-16s batch %4d %12.0f decisions/s %6.2f GFLOP/s (%3.0f%% of peak) %5.1f allocs/op", pass, m, dps, row.GFLOPS, row.PctOfPeak, row.AllocsPerOp)
		res.Rows = append(res.Rows, row)
		return nil
	}
	if err := add("logprobs", 1, res.FwdFlops, LogProbsWorkload(p)); err != nil {
		return res, err
	}
	for _, m := range PolicyBatches {
		if err := add("forward", m, res.FwdFlops, ForwardWorkload(p, m)); err != nil {
			return res, err
		}
	}
	for _, m := range PolicyBatches {
		if err := add("forward+backward", m, res.FwdFlops+res.BwdFlops, ForwardBackwardWorkload(p, m)); err != nil {
			return res, err
		}
	}
	return res, nil
}
