package classeval

import (
	"fmt"
	"os"
	"slices"
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

// TestMeasureExamplesSignal measures what a method's visible examples say
// about its hidden TestCase: for every model and every recorded source
// (m_dire, m_iter, c_t0, c_5#K), each training class is assembled from
// that source alone, its suite run, and each method's examples run on
// it; the table gives, per model, the share of methods whose TestCase
// passes when the examples passed, failed with a wrong output or an error
// in the code, failed only by example faults (exampleFault), or when the
// method has no examples. Behind TROUPE_CLASSEVAL_MEASURE=1 (about 10
// minutes on 2 cores with an empty cache):
//
//	TROUPE_CLASSEVAL_MEASURE=1 go test ./envs/classeval -run TestMeasureExamplesSignal -v -timeout 60m
func TestMeasureExamplesSignal(t *testing.T) {
	if os.Getenv("TROUPE_CLASSEVAL_MEASURE") != "1" {
		t.Skip("set TROUPE_CLASSEVAL_MEASURE=1 to measure")
	}
	e, err := New(map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	const (
		pass = iota
		substantive
		fault
		none
	)
	type tally [4][2]int // [kind][hidden passed, methods]
	var mu sync.Mutex
	byModel := map[string]*tally{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, model := range DefaultPool {
		byModel[model] = &tally{}
		for _, ti := range e.train {
			n := len(e.be.Tasks()[ti].Methods)
			var sources []string
			for j := range n {
				for _, r := range e.be.Recordings(model, ti, j) {
					if !slices.Contains(sources, r.Source) {
						sources = append(sources, r.Source)
					}
				}
			}
			for _, src := range sources {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					recs := make([]*recording, n)
					for j := range n {
						for _, r := range e.be.Recordings(model, ti, j) {
							if r.Source == src {
								recs[j] = &r
							}
						}
					}
					s, err := e.be.Score(ti, recs)
					if err != nil {
						t.Error(err)
						return
					}
					var got tally
					for j := range n {
						if recs[j] == nil {
							continue
						}
						kind := none
						if e.be.Tasks()[ti].Methods[j].Examples > 0 {
							x, err := e.be.RunExamples(ti, j, recs)
							if err != nil {
								t.Error(err)
								return
							}
							switch m := (&method{kinds: x.Kinds}); {
							case x.Pass:
								kind = pass
							case exampleFault(m):
								kind = fault
							default:
								kind = substantive
							}
						}
						got[kind][1]++
						if s.MethodPass[j] {
							got[kind][0]++
						}
					}
					mu.Lock()
					defer mu.Unlock()
					for k := range got {
						byModel[model][k][0] += got[k][0]
						byModel[model][k][1] += got[k][1]
					}
				}()
			}
		}
	}
	wg.Wait()
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %-18s %-18s %-18s %-18s\n", "model", "examples pass", "wrong/code error", "example fault", "no examples")
	for _, model := range DefaultPool {
		fmt.Fprintf(&b, "%-22s", model)
		for k := range 4 {
			x := byModel[model][k]
			fmt.Fprintf(&b, " %5.2f of %-9d", float64(x[0])/float64(max(1, x[1])), x[1])
		}
		b.WriteString("\n")
	}
	t.Logf("hidden TestCase pass rate by what the examples said, training classes, every source:\n%s", b.String())
}
