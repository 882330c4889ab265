package writing

import (
	"testing"

	"github.com/troupe-dev/troupe/core"
)

type summary struct {
	name                          string
	consistency, makespan, tokens float64
	reference, defects            float64
}

// measure runs a policy on seeds 1..n with params and averages
// consistency (the "writing.consistency" reward's score of the document),
// makespan, tokens and the units left defective.
func measure(t testing.TB, params map[string]any, name string, n int, mk func(*Env) policy) summary {
	env, err := New(params)
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
		s.defects += float64(env.Defects())
	}
	f := float64(n)
	s.consistency, s.makespan, s.tokens, s.reference, s.defects = s.consistency/f, s.makespan/f, s.tokens/f, s.reference/f, s.defects/f
	return s
}

// TestCalibration plays every baseline on 40 seeds, with the default pool
// of tiers and rate limits and with a team of one tier (gpt-4o), and holds
// the env to what its design claims (speedup = mean single_agent makespan
// ÷ mean makespan, same seeds):
//
//   - single_agent takes its reference makespan (within 1 %);
//   - the need to coordinate comes from the document: with every writer
//     on one tier (one set of habits), parallel_naive still scores clearly
//     below single_agent and below 0.987;
//   - reading helps: read_deps leaves fewer defective units than
//     read_once_longest, which leaves fewer than parallel_naive;
//   - parallel drafting is faster: parallel_naive ≥ 3× single_agent.
//
// Run with -v to see the table.
func TestCalibration(t *testing.T) {
	if testing.Short() {
		t.Skip("plays 480 episodes")
	}
	const seeds = 40
	for _, tc := range []struct {
		name   string
		params map[string]any
	}{
		{"pool", nil},
		{"gpt-4o team", map[string]any{"team_pool": []any{"gpt-4o"}}},
	} {
		byName := map[string]summary{}
		for _, b := range []string{BaselineSingleAgent, BaselineParallelNaive, BaselineSOP, BaselineReadOnceLongest, BaselineReadOnceReady, BaselineDecentralized, BaselineReadDeps} {
			byName[b] = measure(t, tc.params, b, seeds, func(e *Env) policy { return baselinePolicy(t, e, b) })
		}
		single := byName[BaselineSingleAgent]
		speedup := func(s summary) float64 { return single.makespan / s.makespan }
		for _, b := range []string{BaselineSingleAgent, BaselineParallelNaive, BaselineSOP, BaselineReadOnceLongest, BaselineReadOnceReady, BaselineDecentralized, BaselineReadDeps} {
			s := byName[b]
			t.Logf("%-12s %-18s consistency %.4f  makespan %6.1f s  speedup %.2f  tokens %6.0f  defective units %.2f",
				tc.name, s.name, s.consistency, s.makespan, speedup(s), s.tokens, s.defects)
		}
		if r := single.makespan / single.reference; r < 0.99 || r > 1.01 {
			t.Errorf("%s: single_agent makespan %.1f s vs reference %.1f s", tc.name, single.makespan, single.reference)
		}
		naive := byName[BaselineParallelNaive]
		if naive.consistency > 0.97 || naive.consistency > single.consistency-0.03 {
			t.Errorf("%s: parallel_naive consistency %.4f, single_agent %.4f: want it clearly below (≤ 0.97 and 0.03 under)", tc.name, naive.consistency, single.consistency)
		}
		if speedup(naive) < 3 {
			t.Errorf("%s: parallel_naive speedup %.2f < 3", tc.name, speedup(naive))
		}
		once, deps := byName[BaselineReadOnceLongest], byName[BaselineReadDeps]
		if !(deps.defects < once.defects && once.defects < naive.defects) || deps.consistency <= once.consistency {
			t.Errorf("%s: defective units read_deps %.2f, read_once_longest %.2f, parallel_naive %.2f; consistency read_deps %.4f vs read_once_longest %.4f",
				tc.name, deps.defects, once.defects, naive.defects, deps.consistency, once.consistency)
		}
	}
}
