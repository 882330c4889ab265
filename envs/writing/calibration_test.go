package writing_test

import (
	"fmt"
	"testing"

	"github.com/troupe-dev/troupe/envs/writing"
)

type summary struct {
	name                string
	consistency, makesp float64
	tokens              float64
	refMakespan         float64
}

func measure(t testing.TB, name string, seeds int, mk func(*writing.Env) policy) summary {
	env, err := writing.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	s := summary{name: name}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		res := runEpisode(t, env, seed, mk(env))
		s.consistency += res.Metrics["consistency"]
		s.makesp += res.Metrics["makespan_s"]
		s.tokens += res.Metrics["tokens"]
		s.refMakespan += res.Metrics["reference_makespan_s"]
	}
	n := float64(seeds)
	s.consistency /= n
	s.makesp /= n
	s.tokens /= n
	s.refMakespan /= n
	return s
}

func TestCalibration(t *testing.T) {
	seeds := 100
	if testing.Short() {
		seeds = 30
	}
	single := measure(t, "single_agent", seeds, func(e *writing.Env) policy { return baselinePolicy(t, e, writing.BaselineSingleAgent) })
	naive := measure(t, "parallel_naive", seeds, func(e *writing.Env) policy { return baselinePolicy(t, e, writing.BaselineParallelNaive) })
	sop := measure(t, "sop", seeds, func(e *writing.Env) policy { return baselinePolicy(t, e, writing.BaselineSOP) })
	good := measure(t, "good", seeds, func(*writing.Env) policy { return goodPolicy })
	for _, s := range []summary{single, naive, sop, good} {
		fmt.Printf("%-15s consistency %.4f makespan %.1f speedup %.2f tokens %.0f ref %.1f\n", s.name, s.consistency, s.makesp, single.makesp/s.makesp, s.tokens, s.refMakespan)
	}
}
