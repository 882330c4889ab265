package suite

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
)

// TestModelPassRates assembles every kept class from one model's
// completions in one mode (every method by that model, sample 0; a method
// without extracted code keeps its stub), runs the full suite, and logs the
// method and class pass rates per model and mode, and how often each
// canonical method's docstring examples pass. It is a check of the
// harness against the benchmark's published figures, behind FullEnv:
//
//	TROUPE_CLASSEVAL_FULL=1 go test ./envs/classeval/internal/suite -run TestModelPassRates -v -timeout 60m
func TestModelPassRates(t *testing.T) {
	if os.Getenv(FullEnv) == "" {
		t.Skipf("set %s=1 to run every model's completions", FullEnv)
	}
	r := newRunner(t)
	ds, _ := Embedded()
	out, _ := EmbeddedOutputs()
	ex, _ := EmbeddedExclusions()
	excluded := map[string]bool{}
	for _, e := range ex {
		excluded[e.Class] = true
	}
	var kept []*Class
	for _, c := range ds.Classes {
		if !excluded[c.ID] {
			kept = append(kept, c)
		}
	}
	type key struct {
		model string
		mode  Mode
	}
	type tally struct{ methods, methodPass, classes, classPass int }
	tallies := map[key]*tally{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.NumCPU())
	for _, model := range out.Models() {
		for _, mode := range []Mode{ModeDirect, ModeIter, ModeClassGreedy} {
			if !out.HasMode(model, mode) {
				continue
			}
			k := key{model, mode}
			tallies[k] = &tally{}
			for _, c := range kept {
				wg.Add(1)
				go func() {
					defer wg.Done()
					sem <- struct{}{}
					defer func() { <-sem }()
					impls := make([]Impl, len(c.Methods))
					for i, m := range c.Methods {
						if comps := out.Completions(model, mode, c, m); len(comps) > 0 && comps[0].Status == Extracted {
							impls[i] = comps[0].Impl()
						}
					}
					res, err := r.RunTests(context.Background(), c, impls)
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					defer mu.Unlock()
					tl := tallies[k]
					tl.classes++
					if res.ClassPass {
						tl.classPass++
					}
					for _, p := range res.MethodPass {
						tl.methods++
						if p {
							tl.methodPass++
						}
					}
				}()
			}
		}
	}
	exAttempted, exPass, exMethods := 0, 0, 0
	for _, c := range kept {
		for _, m := range c.Methods {
			if m.ExampleCount == 0 {
				continue
			}
			res, err := r.RunExamples(context.Background(), c, m, c.CanonicalImpls())
			if err != nil {
				t.Fatal(err)
			}
			exMethods++
			exAttempted += res.Attempted
			if res.Pass {
				exPass++
			}
		}
	}
	wg.Wait()
	var keys []key
	for k := range tallies {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].model != keys[j].model {
			return keys[i].model < keys[j].model
		}
		return keys[i].mode < keys[j].mode
	})
	var b strings.Builder
	fmt.Fprintf(&b, "%d kept classes; each class assembled from one model's completions in one mode:\n", len(kept))
	fmt.Fprintf(&b, "%-22s %-7s %12s %12s\n", "model", "mode", "method pass", "class pass")
	for _, k := range keys {
		tl := tallies[k]
		fmt.Fprintf(&b, "%-22s %-7s %5d/%-4d %.3f %3d/%-3d %.3f\n", k.model, k.mode, tl.methodPass, tl.methods, float64(tl.methodPass)/float64(tl.methods), tl.classPass, tl.classes, float64(tl.classPass)/float64(tl.classes))
	}
	fmt.Fprintf(&b, "canonical solution: docstring examples pass for %d of %d methods with examples (%d examples)\n", exPass, exMethods, exAttempted)
	t.Log("\n" + b.String())
	gpt := tallies[key{"GPT-4", ModeDirect}]
	if gpt == nil || gpt.methodPass == 0 {
		t.Error("GPT-4 m_dire passes nothing")
	}
}
