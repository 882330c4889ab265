package coding

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

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

// calibrate plays seeds 1..n with the feature policy and the baselines.
func calibrate(t testing.TB, params map[string]any, n int) map[string]summary {
	out := map[string]summary{}
	for _, name := range []string{"policy", "single_agent", "parallel_naive", "sop"} {
		e, err := New(params)
		if err != nil {
			t.Fatal(err)
		}
		var s summary
		for seed := uint64(1); seed <= uint64(n); seed++ {
			pol := featurePolicy(BaselineRepairs)
			if name != "policy" {
				pol = baselinePolicy(t, e, name)
			}
			res := playEpisode(t, e, seed, pol)
			s.add(res.Metrics)
		}
		out[name] = s
	}
	return out
}

func report(t testing.TB, out map[string]summary) {
	single := out["single_agent"]
	for _, name := range []string{"policy", "single_agent", "parallel_naive", "sop"} {
		s := out[name]
		t.Logf("%-15s pass %.3f  makespan %6.1f s (ref %5.1f)  speedup %.2f  tokens %6.0f (ref %5.0f)  speed %+.3f cost %+.3f reward %.3f",
			name, s.mean(s.pass), s.mean(s.makespan), s.mean(s.ref), single.makespan/s.makespan,
			s.mean(s.tokens), s.mean(s.refTokens), s.mean(s.speed), s.mean(s.cost), s.mean(s.reward))
	}
}

// TestCalibrationLong measures the targets on many seeds; it runs only when
// TROUPE_CODING_EPISODES is set (e.g. 100).
func TestCalibrationLong(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TROUPE_CODING_EPISODES"))
	if n <= 0 {
		t.Skip("set TROUPE_CODING_EPISODES=100 to run")
	}
	begin := time.Now()
	out := calibrate(t, nil, n)
	report(t, out)
	st := SandboxStats()
	t.Logf("%d episodes × 4 policies in %v; sandbox: %d runs, hit rate %.3f", n, time.Since(begin), st.Runs, st.HitRate())
	fmt.Fprint(os.Stderr)
}
