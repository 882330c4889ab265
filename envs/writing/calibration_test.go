package writing

import (
	"testing"

	"github.com/troupe-dev/troupe/core"
)

type summary struct {
	name                          string
	consistency, makespan, tokens float64
	reference                     float64
}

// measure runs a policy on seeds 1..n with the default params and
// averages consistency (the "writing.consistency" reward's score of the
// document), makespan and tokens.
func measure(t testing.TB, name string, n int, mk func(*Env) policy) summary {
	env, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := summary{name: name}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		res := runEpisode(t, env, seed, mk(env))
		s.consistency += consistencyOf(t, res.Artifacts[core.ArtifactDocument])["consistency"]
		s.makespan += res.Metrics[core.MetricMakespan]
		s.tokens += res.Metrics[core.MetricTokens]
		s.reference += res.Metrics[core.MetricReferenceMakespan]
	}
	f := float64(n)
	s.consistency, s.makespan, s.tokens, s.reference = s.consistency/f, s.makespan/f, s.tokens/f, s.reference/f
	return s
}

// TestCalibration measures the baselines and a simple decentralized policy
// over 100 seeds with the runtime's default sim latency model, and holds
// the env to its calibration targets (speedup = mean single_agent makespan
// ÷ mean makespan, same seeds):
//
//	single_agent    consistency ≥ 0.97
//	parallel_naive  speedup ≥ 3.0, consistency ≤ 0.85
//	sop             consistency ≥ 0.98, speedup ≤ 2.5
//	good policy     consistency ≥ 0.987 and speedup ≥ 3.0
func TestCalibration(t *testing.T) {
	const seeds = 100
	single := measure(t, BaselineSingleAgent, seeds, func(e *Env) policy { return baselinePolicy(t, e, BaselineSingleAgent) })
	naive := measure(t, BaselineParallelNaive, seeds, func(e *Env) policy { return baselinePolicy(t, e, BaselineParallelNaive) })
	sop := measure(t, BaselineSOP, seeds, func(e *Env) policy { return baselinePolicy(t, e, BaselineSOP) })
	good := measure(t, "decentralized", seeds, func(*Env) policy { return goodPolicy })
	speedup := func(s summary) float64 { return single.makespan / s.makespan }
	for _, s := range []summary{single, naive, sop, good} {
		t.Logf("%-15s consistency %.4f  makespan %6.1f s  speedup %.2f  tokens %6.0f  (reference makespan %.1f s)",
			s.name, s.consistency, s.makespan, speedup(s), s.tokens, s.reference)
	}
	if single.consistency < 0.97 {
		t.Errorf("single_agent consistency %.4f < 0.97", single.consistency)
	}
	if r := single.makespan / single.reference; r < 0.99 || r > 1.01 {
		t.Errorf("single_agent makespan %.1f s vs reference %.1f s", single.makespan, single.reference)
	}
	if speedup(naive) < 3 || naive.consistency > 0.85 {
		t.Errorf("parallel_naive: speedup %.2f (want ≥ 3), consistency %.4f (want ≤ 0.85)", speedup(naive), naive.consistency)
	}
	if sop.consistency < 0.98 || speedup(sop) > 2.5 {
		t.Errorf("sop: consistency %.4f (want ≥ 0.98), speedup %.2f (want ≤ 2.5)", sop.consistency, speedup(sop))
	}
	if good.consistency < 0.987 || speedup(good) < 3 {
		t.Errorf("decentralized policy: consistency %.4f (want ≥ 0.987), speedup %.2f (want ≥ 3)", good.consistency, speedup(good))
	}
}
