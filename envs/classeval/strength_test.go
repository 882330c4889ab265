package classeval

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/internal/stats"
)

// TestMeasureStrength measures the model table's strengths: per model, the
// fraction of the training classes' methods whose TestCase passes when the
// class is assembled from the model's m_dire completions (modelStrength)
// and from its greedy whole-class sample c_t0 (modelClassStrength).
// It runs only with TROUPE_CLASSEVAL_MEASURE=1 (it runs every training
// class once per model and source, about 40 s on 2 cores with an empty
// cache), prints the table to paste into models.go, and fails where the
// shipped table differs from the measurement (.ci/run runs it):
//
//	TROUPE_CLASSEVAL_MEASURE=1 go test ./envs/classeval -run TestMeasureStrength -v -timeout 60m
func TestMeasureStrength(t *testing.T) {
	e := measureEnv(t)
	sources := []string{"m_dire", "c_t0"}
	shipped := map[string]map[string]float64{"m_dire": modelStrength, "c_t0": modelClassStrength}
	methods := 0 // every training class's, whether a model wrote them or not
	for _, ti := range e.train {
		methods += len(e.be.Tasks()[ti].Methods)
	}
	var mu sync.Mutex
	passed := map[[2]string]int{} // by {source, model}
	eachSourceAssembly(t, e, e.train, DefaultPool, sources, func(model, source string, _ int, _ []*recording, s classScore) {
		mu.Lock()
		defer mu.Unlock()
		passed[[2]string{source, model}] += count(s.MethodPass)
	})
	var b strings.Builder
	for _, source := range sources {
		fmt.Fprintf(&b, "%s:\n", source)
		for _, model := range DefaultPool {
			p := passed[[2]string{source, model}]
			measured := fmt.Sprintf("%.3f", float64(p)/float64(methods))
			fmt.Fprintf(&b, "\t%q: %s, // %d of %d methods\n", model, measured, p, methods)
			if table := fmt.Sprintf("%.3f", shipped[source][model]); table != measured {
				t.Errorf("%s, %s: models.go says %s, measured %s (%d of %d methods)", source, model, table, measured, p, methods)
			}
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
	e := measureEnv(t)
	const (
		pass = iota
		substantive
		fault
		none
	)
	type tally [4][2]int // [kind][hidden passed, methods]
	var mu sync.Mutex
	byModel := map[string]*tally{}
	for _, model := range DefaultPool {
		byModel[model] = &tally{}
	}
	eachSourceAssembly(t, e, e.train, DefaultPool, nil, func(model, _ string, ti int, recs []*recording, s classScore) {
		var got tally
		for j, rec := range recs {
			if rec == nil {
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
	})
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

// eachSourceAssembly calls f, two at a time, for every model of models,
// class of classes (indexes into the backend's tasks) and recorded source
// (m_dire, m_iter, c_t0, c_5#K; only those of sources unless it is nil)
// the model has for the class: the
// class assembled from that source alone (recs[j] nil where the source has
// no completion of method j) and its suite's score.
func eachSourceAssembly(t *testing.T, e *Env, classes []int, models, sources []string, f func(model, source string, ti int, recs []*recording, s classScore)) {
	t.Helper()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for _, model := range models {
		for _, ti := range classes {
			n := len(e.be.Tasks()[ti].Methods)
			var have []string
			for j := range n {
				for _, r := range e.be.Recordings(model, ti, j) {
					if !slices.Contains(have, r.Source) && (sources == nil || slices.Contains(sources, r.Source)) {
						have = append(have, r.Source)
					}
				}
			}
			for _, src := range have {
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
					f(model, src, ti, recs, s)
				}()
			}
		}
	}
	wg.Wait()
}

// TestMeasureSecondOpinion measures whether a second version of a method
// says more about its hidden TestCase than the method's own examples do,
// as differential testing would use it (CodeT, AlphaCode's clustering):
// two versions agree when their examples end the same way (all pass, or
// the same doctest report). On the training classes' methods that have
// examples, each version in its own source's assembly, it prints GPT-4's
// m_dire pass rate split by what its examples said and whether ChatGPT's
// m_dire agrees, then, for sets of versions a team could write, the pass
// rate of keeping GPT-4's m_dire, the first version whose examples pass,
// the plurality of the versions' outcomes, and the best in hindsight.
// Behind TROUPE_CLASSEVAL_MEASURE=1 (about 3 minutes on 2 cores with a
// warm cache):
//
//	TROUPE_CLASSEVAL_MEASURE=1 go test ./envs/classeval -run TestMeasureSecondOpinion -v -timeout 60m
func TestMeasureSecondOpinion(t *testing.T) {
	e := measureEnv(t)
	type version struct {
		hidden, examples bool
		outcome          string // "pass", or the failure report without line numbers
	}
	type methodKey struct{ ti, j int }
	var mu sync.Mutex
	versions := map[methodKey]map[string]version{} // by "model/source"
	eachSourceAssembly(t, e, e.train, []string{"GPT-4", "ChatGPT"}, nil, func(model, source string, ti int, recs []*recording, s classScore) {
		for j, rec := range recs {
			if rec == nil || e.be.Tasks()[ti].Methods[j].Examples == 0 {
				continue
			}
			x, err := e.be.RunExamples(ti, j, recs)
			if err != nil {
				t.Error(err)
				return
			}
			outcome := "pass"
			if !x.Pass {
				outcome = reportLineRe.ReplaceAllString(x.Output, "")
			}
			mu.Lock()
			k := methodKey{ti, j}
			if versions[k] == nil {
				versions[k] = map[string]version{}
			}
			versions[k][model+"/"+source] = version{hidden: s.MethodPass[j], examples: x.Pass, outcome: outcome}
			mu.Unlock()
		}
	})
	const first = "GPT-4/m_dire"
	var split [2][2][2]int // [examples passed][ChatGPT agrees][hidden passed, methods]
	sets := []struct {
		name     string
		versions []string
	}{
		{"GPT-4 m_dire, ChatGPT m_dire", []string{first, "ChatGPT/m_dire"}},
		{"+ GPT-4 c_t0", []string{first, "ChatGPT/m_dire", "GPT-4/c_t0"}},
		{"+ ChatGPT c_t0", []string{first, "ChatGPT/m_dire", "GPT-4/c_t0", "ChatGPT/c_t0"}},
		{"GPT-4 m_dire, m_iter, c_t0", []string{first, "GPT-4/m_iter", "GPT-4/c_t0"}},
	}
	picks := make([][4]int, len(sets)) // kept, first passing examples, plurality, best in hindsight
	methods := 0
	for _, vs := range versions {
		a, ok := vs[first]
		if !ok {
			continue
		}
		methods++
		if c, ok := vs["ChatGPT/m_dire"]; ok {
			x := &split[b2i(a.examples)][b2i(c.outcome == a.outcome)]
			x[0] += b2i(a.hidden)
			x[1]++
		}
		for i, set := range sets {
			var have []version
			for _, name := range set.versions {
				if v, ok := vs[name]; ok {
					have = append(have, v)
				}
			}
			firstPassing, plurality, anyHidden := a, a, false
			for _, v := range slices.Backward(have) {
				if v.examples {
					firstPassing = v
				}
				anyHidden = anyHidden || v.hidden
			}
			votes := map[string]int{}
			for _, v := range have {
				votes[v.outcome]++
			}
			for _, v := range have { // ties: a passing outcome, else the earlier version
				if n := votes[v.outcome]; n > votes[plurality.outcome] || n == votes[plurality.outcome] && v.examples && !plurality.examples {
					plurality = v
				}
			}
			for k, v := range []bool{a.hidden, firstPassing.hidden, plurality.hidden, anyHidden} {
				picks[i][k] += b2i(v)
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "GPT-4 m_dire's hidden TestCase pass rate, %d methods with examples:\n", methods)
	for ex := range 2 {
		for agree := range 2 {
			x := split[ex][agree]
			fmt.Fprintf(&b, "  examples pass %-5v ChatGPT m_dire ends the same way %-5v %.2f of %d\n", ex == 1, agree == 1, float64(x[0])/float64(max(1, x[1])), x[1])
		}
	}
	fmt.Fprintf(&b, "%-30s %8s %14s %10s %10s\n", "versions", "kept", "first passing", "plurality", "hindsight")
	for i, set := range sets {
		p := picks[i]
		fmt.Fprintf(&b, "%-30s %8.3f %14.3f %10.3f %10.3f\n", set.name, float64(p[0])/float64(methods), float64(p[1])/float64(methods), float64(p[2])/float64(methods), float64(p[3])/float64(methods))
	}
	t.Logf("training classes:\n%s", b.String())
}

// reportLineRe matches what differs between two doctest reports of the
// same failure: line numbers and file names.
var reportLineRe = regexp.MustCompile(`line \d+|File "[^"]*"`)

func b2i(v bool) int {
	if v {
		return 1
	}
	return 0
}

// measureEnv skips a measurement unless TROUPE_CLASSEVAL_MEASURE=1 and
// returns the env with its default params; its sandbox outcomes are kept
// in TROUPE_CLASSEVAL_MEASURE_CACHE when that is set (Params.CacheDir:
// the outcomes, and so the measurement, are the same either way).
func measureEnv(t *testing.T) *Env {
	t.Helper()
	if os.Getenv("TROUPE_CLASSEVAL_MEASURE") != "1" {
		t.Skip("set TROUPE_CLASSEVAL_MEASURE=1 to measure")
	}
	e, err := New(map[string]any{"cache_dir": os.Getenv("TROUPE_CLASSEVAL_MEASURE_CACHE")})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestMeasureVisibleFailures measures what a coder could learn from reading
// its own reply, which neither the agents' features nor the rules use: a
// reply cut off mid-code (it does not compile, so the whole class fails),
// one that only restates the skeleton's stub, or one with no code of the
// method are visible on sight, without running anything. Per model, on the
// training classes: the class assembled from the model's m_dire
// completions; the same with every visibly unusable method rewritten by
// the model's next usable version (m_iter, c_t0, c_5#0…, in repair's
// order); and the same with those methods handed to GPT-4 (its m_dire
// version, when usable). It logs, per model, the methods whose TestCase
// passes each way and the rewrites it took. Then it plays strong_by_team
// on the trainer's first 256 training task seeds and logs, by the team's
// strongest model, how many methods it submits visibly broken, and the
// pass rate with those rewritten by that model (1–2 min on 2 cores):
//
//	TROUPE_CLASSEVAL_MEASURE=1 go test ./envs/classeval -run TestMeasureVisibleFailures -v -timeout 60m
func TestMeasureVisibleFailures(t *testing.T) {
	e := measureEnv(t)
	t.Logf("visibly unusable m_dire replies and what rewriting them gains, %d training classes (pass rates over every method):\n%s", len(e.train), visibleFailuresByModel(t, e))
	t.Logf("strong_by_team on 256 training seeds: episodes ending with a visibly unusable method, the share of methods, the pass rate, and its change with those methods rewritten by the team's strongest model:\n%s", visibleFailuresOfRule(t, e))
}

// usable reports whether r is code a reader would take for a whole method
// (not cut off, not a restated stub, not missing).
func usable(r *recording) bool { return r != nil && !visiblyBroken(*r) }

// visibleFailuresByModel is TestMeasureVisibleFailures' table per model
// alone.
func visibleFailuresByModel(t *testing.T, e *Env) string {
	type tally struct{ methods, unusable, base, own, ownRewrites, gpt4, gpt4Rewrites, classes, changed int }
	by := map[string]*tally{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	score := func(ti int, recs []*recording) int {
		s, err := e.be.Score(ti, recs)
		if err != nil {
			t.Error(err)
			return 0
		}
		return count(s.MethodPass)
	}
	for _, model := range DefaultPool {
		tl := &tally{}
		by[model] = tl
		for _, ti := range e.train {
			n := len(e.be.Tasks()[ti].Methods)
			base := make([]*recording, n)
			own, gpt4 := make([]*recording, n), make([]*recording, n)
			bad, ownN, gptN := 0, 0, 0
			for j := range n {
				recs := e.be.Recordings(model, ti, j)
				for k := range recs {
					if recs[k].Source == "m_dire" {
						base[j] = &recs[k]
					}
				}
				own[j], gpt4[j] = base[j], base[j]
				if usable(base[j]) {
					continue
				}
				bad++
				for k := range recs {
					if recs[k].Source != "m_dire" && usable(&recs[k]) {
						own[j] = &recs[k]
						ownN++
						break
					}
				}
				for _, r := range e.be.Recordings("GPT-4", ti, j) {
					if r.Source == "m_dire" && usable(&r) {
						gpt4[j] = &r
						gptN++
					}
				}
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				b := score(ti, base)
				o, g := b, b
				if ownN > 0 {
					o = score(ti, own)
				}
				if gptN > 0 {
					g = score(ti, gpt4)
				}
				mu.Lock()
				defer mu.Unlock()
				tl.methods += n
				tl.unusable += bad
				tl.base, tl.own, tl.gpt4 = tl.base+b, tl.own+o, tl.gpt4+g
				tl.ownRewrites += ownN
				tl.gpt4Rewrites += gptN
				tl.classes++
				if bad > 0 {
					tl.changed++
				}
			}()
		}
	}
	wg.Wait()
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %8s %9s %8s %8s %10s %9s %10s %9s\n", "model (m_dire)", "methods", "unusable", "classes", "passing", "own fix", "rewrites", "GPT-4 fix", "rewrites")
	for _, model := range DefaultPool {
		tl := by[model]
		m := float64(tl.methods)
		fmt.Fprintf(&b, "%-22s %8d %8.1f%% %3d of %2d %8.3f %+10.3f %9d %+10.3f %9d\n", model, tl.methods, 100*float64(tl.unusable)/m,
			tl.changed, tl.classes, float64(tl.base)/m, float64(tl.own-tl.base)/m, tl.ownRewrites, float64(tl.gpt4-tl.base)/m, tl.gpt4Rewrites)
	}
	return b.String()
}

// visibleFailuresOfRule is TestMeasureVisibleFailures' table of
// strong_by_team's episodes.
func visibleFailuresOfRule(t *testing.T, e *Env) string {
	// The same in the best rule's own episodes: strong_by_team on the
	// trainer's first 256 training task seeds, by the team's strongest
	// model: the methods whose final code is visibly unusable (or was
	// never written).
	// Each such method rewritten by the team's strongest model (its first
	// usable version other than the one there), the class scored again:
	// what a rule that rewrote visibly broken code before submitting
	// would pass, before the rewrites' time and dollars.
	type lead struct{ episodes, withBad, methods, bad, passed, fixed, rewrites int }
	leads := map[string]*lead{}
	for k := range 256 {
		seed := rollout.TrainTaskSeed(1, k/8, k%8)
		r := play(t, e, seed, BaselineStrongByTeam)
		best := e.agents[e.strongest()].model.Name
		if leads[best] == nil {
			leads[best] = &lead{}
		}
		l, n := leads[best], 0
		recs := e.recs()
		fixed := slices.Clone(recs)
		for j, m := range e.methods {
			if usable(m.rec) {
				continue
			}
			n++
			versions := e.be.Recordings(best, e.task, j)
			for v := range versions {
				if usable(&versions[v]) && (m.rec == nil || versions[v].Source != m.rec.Source || m.writer != e.strongest()) {
					fixed[j] = &versions[v]
					l.rewrites++
					break
				}
			}
		}
		passed := int(math.Round(r.Metrics[core.MetricPassRate] * float64(len(e.methods))))
		l.episodes++
		l.methods += len(e.methods)
		l.bad += n
		l.withBad += b2i(n > 0)
		l.passed += passed
		l.fixed += passed
		if n > 0 {
			s, err := e.be.Score(e.task, fixed)
			if err != nil {
				t.Fatal(err)
			}
			l.fixed += count(s.MethodPass) - passed
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %8s %14s %9s %8s %10s %9s\n", "team's strongest", "episodes", "with one", "methods", "passing", "rewritten", "rewrites")
	var all lead
	for _, name := range DefaultPool {
		l := leads[name]
		if l == nil {
			continue
		}
		fmt.Fprintf(&b, "%-22s %8d %8d (%2.0f%%) %8.1f%% %8.3f %+10.3f %9d\n", name, l.episodes, l.withBad, 100*float64(l.withBad)/float64(l.episodes),
			100*float64(l.bad)/float64(l.methods), float64(l.passed)/float64(l.methods), float64(l.fixed-l.passed)/float64(l.methods), l.rewrites)
		all.episodes, all.withBad, all.methods, all.bad = all.episodes+l.episodes, all.withBad+l.withBad, all.methods+l.methods, all.bad+l.bad
		all.passed, all.fixed, all.rewrites = all.passed+l.passed, all.fixed+l.fixed, all.rewrites+l.rewrites
	}
	fmt.Fprintf(&b, "%-22s %8d %8d (%2.0f%%) %8.1f%% %8.3f %+10.3f %9d\n", "all", all.episodes, all.withBad, 100*float64(all.withBad)/float64(all.episodes),
		100*float64(all.bad)/float64(all.methods), float64(all.passed)/float64(all.methods), float64(all.fixed-all.passed)/float64(all.methods), all.rewrites)
	return b.String()
}

// count returns the number of true values of xs.
func count(xs []bool) int {
	n := 0
	for _, x := range xs {
		n += b2i(x)
	}
	return n
}

// TestMeasureAssignment measures whether what a coder sees of a method
// before anyone writes it — its description's length, its dependencies —
// tells which methods a weaker teammate should take so that the team
// loses least to parallel work. For every pair of the pool's models, the
// stronger S and the weaker W (by modelStrength), on every training class
// with at least two methods, W takes ⌊M/2⌋ of the methods and S the rest,
// each scored as in its own model's m_dire assembly; W's half is chosen in
// the order the skeleton gives (its last half, or its first), by the
// shortest descriptions, by the fewest method dependencies, or in
// hindsight (the methods where W loses least to S). It logs the method
// pass rate of each choice per pair, over all pairs the shortest
// descriptions against the skeleton's order, paired by (pair, class) with
// a 95 % interval, and per model how well a short description predicts
// that its method passes (AUC). Behind TROUPE_CLASSEVAL_MEASURE=1 (about 1 minute on 2
// cores with an empty cache):
//
//	TROUPE_CLASSEVAL_MEASURE=1 go test ./envs/classeval -run TestMeasureAssignment -v -timeout 60m
func TestMeasureAssignment(t *testing.T) {
	e := measureEnv(t)
	sb, ok := e.be.(*suiteBackend)
	if !ok {
		t.Fatalf("backend %T: the measurement reads method descriptions from the suite backend", e.be)
	}
	var mu sync.Mutex
	pass := map[string]map[int][]bool{} // by model, training class: per method
	eachSourceAssembly(t, e, e.train, DefaultPool, []string{"m_dire"}, func(model, _ string, ti int, _ []*recording, s classScore) {
		mu.Lock()
		defer mu.Unlock()
		if pass[model] == nil {
			pass[model] = map[int][]bool{}
		}
		pass[model][ti] = s.MethodPass
	})
	choices := []string{"S alone", "W last half", "W first half", "W shortest", "W fewest deps", "W hindsight"}
	var b strings.Builder
	fmt.Fprintf(&b, "%-42s", "S / W")
	for _, c := range choices {
		fmt.Fprintf(&b, " %13s", c)
	}
	b.WriteString("\n")
	var shortest, inOrder []float64 // per (pair, class)
	for _, s := range DefaultPool {
		for _, w := range DefaultPool {
			if strengthOf(w) >= strengthOf(s) {
				continue
			}
			sum := make([]float64, len(choices))
			classes := 0
			for _, ti := range e.train {
				ps, pw := pass[s][ti], pass[w][ti]
				m := len(ps)
				if m < 2 || len(pw) != m {
					continue
				}
				desc := sb.cls[ti].Methods
				idx := make([]int, m)
				for j := range idx {
					idx[j] = j
				}
				score := func(order []int) float64 { // W takes order[:m/2]
					ok := 0
					for k, j := range order {
						if k < m/2 && pw[j] || k >= m/2 && ps[j] {
							ok++
						}
					}
					return float64(ok) / float64(m)
				}
				by := func(key func(j int) int) []int {
					o := slices.Clone(idx)
					slices.SortStableFunc(o, func(a, c int) int { return key(a) - key(c) })
					return o
				}
				last := by(func(j int) int { return -j })
				got := []float64{
					float64(count(ps)) / float64(m),
					score(last),
					score(idx),
					score(by(func(j int) int { return len(desc[j].Description) })),
					score(by(func(j int) int { return len(desc[j].MethodDeps) })),
					score(by(func(j int) int { return b2i(ps[j]) - b2i(pw[j]) })),
				}
				for k := range got {
					sum[k] += got[k]
				}
				shortest = append(shortest, got[3])
				inOrder = append(inOrder, got[1])
				classes++
			}
			fmt.Fprintf(&b, "%-42s", s+" / "+w)
			for k := range choices {
				fmt.Fprintf(&b, " %13.3f", sum[k]/float64(max(1, classes)))
			}
			b.WriteString("\n")
		}
	}
	// How well a short description predicts that a model's method passes:
	// the AUC of −len(description) for the hidden TestCase, per model.
	var auc strings.Builder
	for _, model := range DefaultPool {
		var short []float64
		var passed []bool
		for _, ti := range e.train {
			for j, ok := range pass[model][ti] {
				short = append(short, -float64(len(sb.cls[ti].Methods[j].Description)))
				passed = append(passed, ok)
			}
		}
		fmt.Fprintf(&auc, " %s %.2f", model, stats.AUC(short, passed))
	}
	t.Logf("AUC of a shorter description for a passing method (m_dire):%s", auc.String())
	d := stats.PairedDiffCI(shortest, inOrder)
	t.Logf("method pass rate when the weaker model W writes half of each training class, by how the half is chosen:\n%s", b.String())
	t.Logf("over every pair and class (%d): W shortest − W last half %+.4f %s", d.Pairs, d.Mean, d.CI95)
}

// TestMeasureWhatPredictsAPass measures how well everything a team can see
// of a method's version, taken together, predicts whether its hidden
// TestCase passes — the ceiling of any policy's judgement of "keep or
// rewrite" — against what the rules read. Every recorded version (every
// model, source and class, each in its own source's assembly, its examples
// run) is a row; a logistic regression is fitted on the training classes'
// rows and scored on the held-out classes' (AUC) with three feature sets:
// the model alone; the model, whether the method has examples, whether they
// passed and whether the reply is visibly broken (what the rules read);
// and all of that plus the source, the kinds of failed examples, the
// reply's, code's and description's lengths, the method's dependencies and
// position, and the model × examples interactions. Behind
// TROUPE_CLASSEVAL_MEASURE=1 (about 20 minutes on 2 cores with an empty
// cache, since it runs every version's examples; 2 s with a filled one):
//
//	TROUPE_CLASSEVAL_MEASURE=1 TROUPE_CLASSEVAL_MEASURE_CACHE=/tmp/ce-cache go test ./envs/classeval -run TestMeasureWhatPredictsAPass -v -timeout 60m
func TestMeasureWhatPredictsAPass(t *testing.T) {
	e := measureEnv(t)
	sb, ok := e.be.(*suiteBackend)
	if !ok {
		t.Fatalf("backend %T: the measurement reads method descriptions from the suite backend", e.be)
	}
	held := map[int]bool{}
	for _, ti := range e.held {
		held[ti] = true
	}
	sources := []string{"m_dire", "m_iter", "c_t0", "c_5"}
	type version struct {
		model, source    string // source without a sample's #K
		sample           string // the recorded source, c_5#K included
		ti, j, methods   int
		held, pass       bool
		examples, broken bool
		examplesPass     bool
		kinds            [4]int
		replyTokens      int
		code, desc, deps int
	}
	var mu sync.Mutex
	var versions []version
	eachSourceAssembly(t, e, append(slices.Clone(e.train), e.held...), DefaultPool, nil, func(model, source string, ti int, recs []*recording, s classScore) {
		task := e.be.Tasks()[ti]
		var got []version
		for j, rec := range recs {
			if rec == nil {
				continue
			}
			m := task.Methods[j]
			v := version{model: model, source: strings.Split(source, "#")[0], sample: source, ti: ti, j: j, methods: len(task.Methods),
				held: held[ti], pass: s.MethodPass[j], examples: m.Examples > 0, broken: visiblyBroken(*rec),
				replyTokens: rec.CompletionTokens, code: len(rec.impl.Source),
				desc: len(sb.cls[ti].Methods[j].Description), deps: len(m.Deps)}
			if v.examples {
				x, err := e.be.RunExamples(ti, j, recs)
				if err != nil {
					t.Error(err)
					return
				}
				v.examplesPass, v.kinds = x.Pass, x.Kinds
			}
			got = append(got, v)
		}
		mu.Lock()
		defer mu.Unlock()
		versions = append(versions, got...)
	})
	// eachSourceAssembly runs concurrently: fix the rows' order.
	slices.SortFunc(versions, func(a, b version) int {
		return cmp.Or(strings.Compare(a.model, b.model), strings.Compare(a.sample, b.sample), cmp.Compare(a.ti, b.ti), cmp.Compare(a.j, b.j))
	})
	f := b2f
	ruleFeatures := func(v version) []float64 {
		x := []float64{1}
		for _, m := range DefaultPool {
			x = append(x, f(v.model == m))
		}
		return append(x, f(v.examples), f(v.examples && v.examplesPass), f(v.examples && !v.examplesPass), f(v.broken))
	}
	sets := []struct {
		name     string
		features func(v version) []float64
	}{
		{"the model alone", func(v version) []float64 { return ruleFeatures(v)[:1+len(DefaultPool)] }},
		{"model, examples, broken (the rules')", ruleFeatures},
		{"everything visible", func(v version) []float64 {
			x := ruleFeatures(v)
			for _, s := range sources {
				x = append(x, f(v.source == s))
			}
			for _, k := range v.kinds {
				x = append(x, f(k > 0))
			}
			x = append(x, math.Log1p(float64(v.replyTokens)), math.Log1p(float64(v.code)), math.Log1p(float64(v.desc)),
				float64(v.deps), float64(v.methods)/10, float64(v.j)/float64(v.methods))
			for _, m := range DefaultPool {
				x = append(x, f(v.model == m && v.examples && v.examplesPass), f(v.model == m && v.examples && !v.examplesPass))
			}
			return x
		}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-38s %10s %10s %10s %10s\n", "features", "train AUC", "held AUC", "GPT-4", "ChatGPT")
	for _, set := range sets {
		var trainX, heldX [][]float64
		var trainY, heldY []bool
		var heldModel []string
		for _, v := range versions {
			if v.held {
				heldX, heldY, heldModel = append(heldX, set.features(v)), append(heldY, v.pass), append(heldModel, v.model)
			} else {
				trainX, trainY = append(trainX, set.features(v)), append(trainY, v.pass)
			}
		}
		w := stats.FitLogistic(trainX, trainY, 1)
		score := func(xs [][]float64) []float64 {
			out := make([]float64, len(xs))
			for i, x := range xs {
				out[i] = stats.Dot(w, x)
			}
			return out
		}
		heldS := score(heldX)
		only := func(model string) ([]float64, []bool) {
			var s []float64
			var y []bool
			for i, m := range heldModel {
				if m == model {
					s, y = append(s, heldS[i]), append(y, heldY[i])
				}
			}
			return s, y
		}
		g4s, g4y := only("GPT-4")
		cgs, cgy := only("ChatGPT")
		fmt.Fprintf(&b, "%-38s %10.3f %10.3f %10.3f %10.3f\n", set.name, stats.AUC(score(trainX), trainY), stats.AUC(heldS, heldY), stats.AUC(g4s, g4y), stats.AUC(cgs, cgy))
	}
	nHeld := 0
	for _, v := range versions {
		nHeld += b2i(v.held)
	}
	t.Logf("%d versions (%d of held-out classes): how well each feature set predicts a version's hidden TestCase, fitted on the training classes:\n%s", len(versions), nHeld, b.String())
}
