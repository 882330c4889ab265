package suite

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// MeasureEnv makes TestMeasureTimings measure and rewrite data/timings.json.
const MeasureEnv = "TROUPE_CLASSEVAL_MEASURE"

// TestMeasureTimings measures, one run at a time, the wall time of every
// kept class's full suite on its canonical solution and of every method's
// examples, three times each, keeps the fastest (the least disturbed by
// other load), and writes data/timings.json. Run it on a quiet machine:
//
//	TROUPE_CLASSEVAL_MEASURE=1 go test ./envs/classeval/internal/suite -run TestMeasureTimings -v -timeout 30m
func TestMeasureTimings(t *testing.T) {
	if os.Getenv(MeasureEnv) == "" {
		t.Skipf("set %s=1 to measure data/timings.json", MeasureEnv)
	}
	r := newRunner(t)
	ds, _ := Embedded()
	ex, _ := EmbeddedExclusions()
	excluded := map[string]bool{}
	for _, e := range ex {
		excluded[e.Class] = true
	}
	fastest := func(run func() time.Duration) float64 {
		best := time.Duration(0)
		for k := range 3 {
			if d := run(); k == 0 || d < best {
				best = d
			}
		}
		return float64(best.Round(time.Millisecond)) / float64(time.Second)
	}
	host, _ := os.Hostname()
	tim := Timings{
		Machine: runtime.GOOS + "/" + runtime.GOARCH + ", " + host + ", " + cpuModel() + ", /usr/bin/python3 (Debian 3.11), sandbox isolation " + string(r.sb.Isolation().Mode) +
			"; fastest of 3 sequential runs, other load on the machine not controlled",
		Command: "TROUPE_CLASSEVAL_MEASURE=1 go test ./envs/classeval/internal/suite -run TestMeasureTimings -v",
		Classes: map[string]ClassTiming{},
	}
	var all, allEx []float64
	for _, c := range ds.Classes {
		if excluded[c.ID] {
			continue
		}
		impls := c.CanonicalImpls()
		ct := ClassTiming{ExamplesS: map[string]float64{}}
		ct.TestsS = fastest(func() time.Duration {
			p := r.TestsProgram(c, impls)
			p.NoCache = true
			res, err := r.sb.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			return res.Wall
		})
		all = append(all, ct.TestsS)
		for _, m := range c.Methods {
			if m.ExampleCount == 0 {
				continue
			}
			s := fastest(func() time.Duration {
				p := r.ExamplesProgram(c, m, impls)
				p.NoCache = true
				res, err := r.sb.Run(context.Background(), p)
				if err != nil {
					t.Fatal(err)
				}
				return res.Wall
			})
			ct.ExamplesS[m.Name] = s
			allEx = append(allEx, s)
		}
		tim.Classes[c.ID] = ct
		t.Logf("%s: tests %.3fs", c.ID, ct.TestsS)
	}
	tim.DefaultTestsS, tim.DefaultExamplesS = median(all), median(allEx)
	b, _ := json.MarshalIndent(tim, "", " ")
	if err := os.WriteFile(filepath.Join("data", "timings.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	slices.Sort(all)
	t.Logf("tests: median %.3fs, max %.3fs over %d classes; examples median %.3fs", tim.DefaultTestsS, all[len(all)-1], len(all), tim.DefaultExamplesS)
}

// cpuModel returns the CPU model name from /proc/cpuinfo.
func cpuModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v) + fmt.Sprintf(" (%d CPUs)", runtime.NumCPU())
		}
	}
	return "unknown CPU"
}
