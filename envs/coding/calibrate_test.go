package coding

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"time"
)

// summary accumulates episode metrics and the joint reward at the default
// weights (quality 1, speed 0.5, cost 0.1), with speed and cost computed as
// the built-in rewards "makespan" and "tokens" do.
type summary struct {
	pass, makespan, ref, tokens, refTokens, reward, speed, cost float64
	n                                                           int
}

func (s *summary) add(m map[string]float64) {
	speed := max(-1, min(1, 1-m["makespan_s"]/m["reference_makespan_s"]))
	cost := -max(0, min(5, m["tokens"]/m["reference_tokens"]))
	s.pass += m["pass_rate"]
	s.makespan += m["makespan_s"]
	s.ref += m["reference_makespan_s"]
	s.tokens += m["tokens"]
	s.refTokens += m["reference_tokens"]
	s.speed += speed
	s.cost += cost
	s.reward += m["pass_rate"] + 0.5*speed + 0.1*cost
	s.n++
}

func (s summary) mean(x float64) float64 { return x / float64(s.n) }

var calibrated = []string{"policy", "single_agent", "parallel_naive", "sop"}

// calibrate plays seeds 1..n with the feature policy and each baseline.
func calibrate(t testing.TB, params map[string]any, n int) map[string]summary {
	out := map[string]summary{}
	for _, name := range calibrated {
		e, err := New(params)
		if err != nil {
			t.Fatal(err)
		}
		var s summary
		for seed := uint64(1); seed <= uint64(n); seed++ {
			pol := featurePolicy(policyRepairs)
			if name != "policy" {
				pol = baselinePolicy(t, e, name)
			}
			s.add(playEpisode(t, e, seed, pol).Metrics)
		}
		out[name] = s
	}
	return out
}

func report(t testing.TB, out map[string]summary) {
	single := out["single_agent"]
	for _, name := range calibrated {
		s := out[name]
		t.Logf("%-15s pass %.3f  makespan %5.1f s (ref %4.1f)  speedup %.2f  tokens %5.0f (ref %4.0f)  speed %+.3f  cost %+.3f  reward %.3f",
			name, s.mean(s.pass), s.mean(s.makespan), s.mean(s.ref), single.makespan/s.makespan,
			s.mean(s.tokens), s.mean(s.refTokens), s.mean(s.speed), s.mean(s.cost), s.mean(s.reward))
	}
}

// checkTargets asserts the calibration targets: the feature policy reaches
// pass rate ≥ 0.746 and speedup ≥ 3.0 over single_agent, and a higher joint
// reward than sop and parallel_naive; parallel_naive is fast and about
// half right; sop is more accurate than parallel_naive and slower.
func checkTargets(t *testing.T, out map[string]summary) {
	pol, single, naive, sop := out["policy"], out["single_agent"], out["parallel_naive"], out["sop"]
	if p := pol.mean(pol.pass); p < 0.746 {
		t.Errorf("policy pass rate %.3f < 0.746", p)
	}
	if sp := single.makespan / pol.makespan; sp < 3.0 {
		t.Errorf("policy speedup %.2f < 3.0", sp)
	}
	if pol.reward <= sop.reward || pol.reward <= naive.reward {
		t.Errorf("policy reward %.3f must beat sop %.3f and parallel_naive %.3f", pol.mean(pol.reward), sop.mean(sop.reward), naive.mean(naive.reward))
	}
	if p := naive.mean(naive.pass); p < 0.4 || p > 0.7 {
		t.Errorf("parallel_naive pass rate %.3f, want about 0.5–0.6", p)
	}
	if naive.makespan >= sop.makespan || sop.pass <= naive.pass {
		t.Errorf("want parallel_naive faster and sop more accurate")
	}
}

// TestCalibration plays 12 seeds with the feature policy and each baseline
// (the sandbox cache makes the baselines' repeated programs free).
func TestCalibration(t *testing.T) {
	n := 12
	if testing.Short() {
		n = 4
	}
	begin := time.Now()
	out := calibrate(t, nil, n)
	report(t, out)
	st := sandboxStats()
	t.Logf("%d seeds × %d policies in %v; sandbox %d runs, cache hit rate %.3f", n, len(calibrated), time.Since(begin).Round(time.Millisecond), st.Runs, st.HitRate())
	if !testing.Short() {
		checkTargets(t, out)
	}
}

// TestCalibrationLong measures the targets on many seeds; it runs only when
// TROUPE_CODING_EPISODES is set, with the env params in
// TROUPE_CODING_PARAMS (JSON; the defaults when unset):
//
//	TROUPE_CODING_EPISODES=100 go test -run CalibrationLong -v ./envs/coding/
func TestCalibrationLong(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TROUPE_CODING_EPISODES"))
	if n <= 0 {
		t.Skip("set TROUPE_CODING_EPISODES=100 to run")
	}
	var params map[string]any
	if js := os.Getenv("TROUPE_CODING_PARAMS"); js != "" {
		if err := json.Unmarshal([]byte(js), &params); err != nil {
			t.Fatalf("TROUPE_CODING_PARAMS: %v", err)
		}
	}
	begin := time.Now()
	out := calibrate(t, params, n)
	report(t, out)
	st := sandboxStats()
	t.Logf("%d seeds × %d policies in %v; sandbox %d runs, cache hit rate %.3f", n, len(calibrated), time.Since(begin).Round(time.Second), st.Runs, st.HitRate())
	if params == nil {
		checkTargets(t, out)
	}

	// A second pass over the same seeds, as training revisits tasks: every
	// program is cached now.
	before := sandboxStats()
	begin = time.Now()
	e, err := New(params)
	if err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed <= uint64(n); seed++ {
		playEpisode(t, e, seed, featurePolicy(policyRepairs))
	}
	after := sandboxStats()
	took := time.Since(begin)
	t.Logf("warm pass: %d episodes in %v = %.0f episodes/s; %d new runs, hit rate %.3f", n, took.Round(time.Millisecond),
		float64(n)/took.Seconds(), after.Runs-before.Runs, float64(after.Hits-before.Hits)/float64(after.Hits-before.Hits+after.Misses-before.Misses))
}

// BenchmarkEpisode measures warm-cache episodes of the feature policy (the
// first pass over the seeds fills the cache and is not timed).
func BenchmarkEpisode(b *testing.B) {
	e, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	const seeds = 8
	for seed := uint64(1); seed <= seeds; seed++ {
		playEpisode(b, e, seed, featurePolicy(policyRepairs))
	}
	before := sandboxStats()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		playEpisode(b, e, uint64(i%seeds)+1, featurePolicy(policyRepairs))
		i++
	}
	after := sandboxStats()
	b.ReportMetric(float64(after.Runs-before.Runs)/float64(i), "runs/episode")
}
