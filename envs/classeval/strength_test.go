package classeval

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestMeasureStrength measures the model table's strengths: per model, the
// fraction of the training classes' methods whose TestCase passes when the
// class is assembled from the model's m_dire completions (modelStrength)
// and from its greedy whole-class sample c_t0 (modelClassStrength).
// It runs only with TROUPE_CLASSEVAL_MEASURE=1 (it runs every training
// class once per model) and prints the table to paste into models.go:
//
//	TROUPE_CLASSEVAL_MEASURE=1 go test ./envs/classeval -run TestMeasureStrength -v -timeout 60m
func TestMeasureStrength(t *testing.T) {
	if os.Getenv("TROUPE_CLASSEVAL_MEASURE") != "1" {
		t.Skip("set TROUPE_CLASSEVAL_MEASURE=1 to measure")
	}
	e, err := New(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, source := range []string{"m_dire", "c_t0"} {
		fmt.Fprintf(&b, "%s:\n", source)
		for _, model := range DefaultPool {
			passed, total := make([]int, len(e.train)), make([]int, len(e.train))
			var wg sync.WaitGroup
			sem := make(chan struct{}, 2)
			for k, ti := range e.train {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					n := len(e.be.Tasks()[ti].Methods)
					recs := make([]*recording, n)
					for j := range n {
						for _, r := range e.be.Recordings(model, ti, j) {
							if r.Source == source {
								recs[j] = &r
								break
							}
						}
					}
					s, err := e.be.Score(ti, recs)
					if err != nil {
						t.Error(err)
						return
					}
					for _, p := range s.MethodPass {
						if p {
							passed[k]++
						}
					}
					total[k] = n
				}()
			}
			wg.Wait()
			p, n := 0, 0
			for k := range passed {
				p += passed[k]
				n += total[k]
			}
			fmt.Fprintf(&b, "\t%q: %.3f, // %d of %d methods\n", model, float64(p)/float64(n), p, n)
		}
	}
	t.Logf("measured on %d training classes:\n%s", len(e.train), b.String())
}
