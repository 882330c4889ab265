package classeval

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/envtest"
	"github.com/troupe-dev/troupe/envs/classeval/internal/suite"
)

// fakeEnv returns an env on the fake backend with a fixed strength table.
func fakeEnv(t *testing.T, params map[string]any) *Env {
	t.Helper()
	p := DefaultParams()
	p.Pool = []string{"GPT-4", "ChatGPT", "Vicuna", "CodeGeeX"}
	if err := core.DecodeParams(params, &p); err != nil {
		t.Fatal(err)
	}
	if err := p.validate(); err != nil {
		t.Fatal(err)
	}
	e, err := newEnv(p, newFake())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func withStrengths(t *testing.T) {
	old := modelStrength
	modelStrength = map[string]float64{"GPT-4": 0.6, "ChatGPT": 0.5, "CodeGeeX": 0.3, "Vicuna": 0.1}
	t.Cleanup(func() { modelStrength = old })
}

// play runs one episode of the named baseline and returns its last result.
func play(t *testing.T, e *Env, seed uint64, name string) core.StepResult {
	t.Helper()
	b, err := e.Baseline(name)
	if err != nil {
		t.Fatal(err)
	}
	return playJoint(t, e, seed, func() []int {
		acts, err := b.Act(nil)
		if err != nil {
			t.Fatal(err)
		}
		return acts
	})
}

// playJoint plays one episode from seed in which joint gives every step's
// joint action, and returns its last result.
func playJoint(t *testing.T, e *Env, seed uint64, joint func() []int) core.StepResult {
	t.Helper()
	if _, err := e.Reset(seed); err != nil {
		t.Fatal(err)
	}
	for range 1000 {
		acts := joint()
		actions := make([]core.Action, len(acts))
		for i, d := range acts {
			actions[i] = core.Action{Decision: d}
		}
		r, err := e.Step(actions)
		if err != nil {
			t.Fatal(err)
		}
		if r.Done() {
			return r
		}
	}
	t.Fatal("no end in 1000 steps")
	return core.StepResult{}
}

// agentOf returns the coder backed by model, -1 if the team has none.
func agentOf(e *Env, model string) int {
	return slices.IndexFunc(e.agents, func(a *agent) bool { return a.model.Name == model })
}

// seedWhere returns the first seed from 2 whose team ok accepts.
func seedWhere(t *testing.T, e *Env, ok func() bool) uint64 {
	t.Helper()
	for s := uint64(2); s < 200; s++ {
		if _, err := e.Reset(s); err != nil {
			t.Fatal(err)
		}
		if ok() {
			return s
		}
	}
	t.Fatal("no such seed below 200")
	return 0
}

func TestFakeContract(t *testing.T) {
	withStrengths(t)
	src, err := core.NewEnvSource(func(params map[string]any) (core.Env, error) {
		p := DefaultParams()
		p.Pool = []string{"GPT-4", "ChatGPT", "Vicuna", "CodeGeeX"}
		return newEnv(p, newFake())
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	envtest.Check(t, src)
}

// Each baseline does what its rule says, on a team whose make-up is known.
func TestFakeBaselines(t *testing.T) {
	withStrengths(t)
	e := fakeEnv(t, map[string]any{"split": "all"})
	// Find a seed whose team is ChatGPT + Vicuna + CodeGeeX (no GPT-4), and
	// one with GPT-4.
	var weak, strong uint64
	for s := uint64(2); s < 200 && (weak == 0 || strong == 0); s++ {
		e.Reset(s)
		has := false
		for _, a := range e.agents {
			has = has || a.model.Name == "GPT-4"
		}
		if has && strong == 0 {
			strong = s
		}
		if !has && weak == 0 {
			weak = s
		}
	}
	r := play(t, e, strong, BaselineSingleAgent)
	var res episodeResult
	if err := json.Unmarshal(r.Artifacts["results.json"], &res); err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Methods {
		if res.Team[m.Owner] != "GPT-4" || !strings.HasPrefix(m.Source, "GPT-4/") {
			t.Errorf("single_agent: %s owned by coder%d (%s), source %s; want GPT-4, the strongest, alone", m.Method, m.Owner, res.Team[m.Owner], m.Source)
		}
	}
	if res.Backend != "replay" {
		t.Errorf("results.json backend %q, want replay", res.Backend)
	}
	if r.Metrics[core.MetricPassRate] != 1 || r.Metrics[MetricClassPass] != 1 {
		t.Errorf("single_agent with GPT-4 (always right): pass %v class %v", r.Metrics[core.MetricPassRate], r.Metrics[MetricClassPass])
	}
	if r.Metrics[MetricReplayedCalls] != 3 || r.Metrics[MetricExampleRuns] != 3 {
		t.Errorf("single_agent: %v calls, %v example runs, want 3 and 3", r.Metrics[MetricReplayedCalls], r.Metrics[MetricExampleRuns])
	}
	// ChatGPT from the skeleton is wrong; its examples fail, the rewrite
	// (m_iter once the dependencies are written, else c_t0) is right.
	r = play(t, e, weak, BaselineSingleAgent)
	if r.Metrics[core.MetricPassRate] != 1 || r.Metrics[MetricRewrites] != 3 {
		t.Errorf("single_agent with ChatGPT: pass %v after %v rewrites, want 1 after 3", r.Metrics[core.MetricPassRate], r.Metrics[MetricRewrites])
	}
	// parallel_naive never runs examples and never rewrites.
	r = play(t, e, weak, BaselineParallelNaive)
	if r.Metrics[MetricExampleRuns] != 0 || r.Metrics[MetricRewrites] != 0 || r.Metrics[MetricReplayedCalls] != 3 {
		t.Errorf("parallel_naive: %v runs, %v rewrites, %v calls", r.Metrics[MetricExampleRuns], r.Metrics[MetricRewrites], r.Metrics[MetricReplayedCalls])
	}
	// solo_Vicuna: Vicuna's replies hold no code: nothing passes.
	r = play(t, e, strong, soloPrefix+"Vicuna")
	if r.Metrics[core.MetricPassRate] != 0 || r.Metrics[MetricUnextracted] == 0 {
		t.Errorf("solo_Vicuna: pass %v, unextracted %v", r.Metrics[core.MetricPassRate], r.Metrics[MetricUnextracted])
	}
	// test_escalate: the strongest rewrites what the others fail.
	r = play(t, e, weak, BaselineEscalate)
	if r.Metrics[core.MetricPassRate] < 2.0/3 {
		t.Errorf("test_escalate on ChatGPT+Vicuna+CodeGeeX: pass %v", r.Metrics[core.MetricPassRate])
	}
	// deps_first writes in context (m_iter) whenever its model can.
	r = play(t, e, weak, BaselineDepsFirst)
	if !strings.Contains(string(r.Artifacts["results.json"]), "/m_iter") {
		t.Errorf("deps_first wrote nothing in context: %s", r.Artifacts["results.json"])
	}
	// strong_naive and strong_test: only ChatGPT (0.5; CodeGeeX's 0.3 is
	// below 0.75 of it) works; strong_naive never tests, strong_test tests
	// and rewrites as single_agent does.
	for _, c := range []struct {
		name     string
		pass     float64
		runs     float64
		rewrites float64
	}{{BaselineStrongNaive, 0, 0, 0}, {BaselineStrongTest, 1, 6, 3}} {
		r = play(t, e, weak, c.name)
		var res episodeResult
		if err := json.Unmarshal(r.Artifacts["results.json"], &res); err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Methods {
			if res.Team[m.Owner] != "ChatGPT" {
				t.Errorf("%s: %s owned by %s, want ChatGPT, the only capable coder", c.name, m.Method, res.Team[m.Owner])
			}
		}
		if r.Metrics[core.MetricPassRate] != c.pass || r.Metrics[MetricExampleRuns] != c.runs || r.Metrics[MetricRewrites] != c.rewrites {
			t.Errorf("%s: pass %v, %v example runs, %v rewrites; want %v, %v, %v", c.name, r.Metrics[core.MetricPassRate], r.Metrics[MetricExampleRuns], r.Metrics[MetricRewrites], c.pass, c.runs, c.rewrites)
		}
	}
	// strong_by_team: with ChatGPT the best, ChatGPT (the best whole-class
	// writer) writes the class in one call; with GPT-4 the best, the class
	// has 3 methods, so GPT-4 writes it in one call (holistic_or_split).
	// Nobody runs examples. holistic does the same on both teams.
	for _, name := range []string{BaselineStrongByTeam, BaselineHolistic, BaselineHolisticSplit} {
		for _, c := range []struct {
			seed   uint64
			writer string
		}{{weak, "ChatGPT"}, {strong, "GPT-4"}} {
			r = play(t, e, c.seed, name)
			var res episodeResult
			if err := json.Unmarshal(r.Artifacts["results.json"], &res); err != nil {
				t.Fatal(err)
			}
			for _, m := range res.Methods {
				if res.Team[m.Owner] != c.writer || m.Source != c.writer+"/c_t0" {
					t.Errorf("%s, team %v: %s written by %s from %s; want %s/c_t0", name, res.Team, m.Method, res.Team[m.Owner], m.Source, c.writer)
				}
			}
			if r.Metrics[MetricExampleRuns] != 0 || r.Metrics[MetricReplayedCalls] != 1 || r.Metrics[core.MetricPassRate] != 1 {
				t.Errorf("%s, team %v: %v example runs, %v calls, pass %v; want 0, 1, 1", name, res.Team, r.Metrics[MetricExampleRuns], r.Metrics[MetricReplayedCalls], r.Metrics[core.MetricPassRate])
			}
		}
	}
	// sop rewrites each failure at most once.
	r = play(t, e, weak, BaselineSOP)
	if err := json.Unmarshal(r.Artifacts["results.json"], &res); err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Methods {
		if m.Versions > 2 {
			t.Errorf("sop: %s has %d versions, want at most 2", m.Method, m.Versions)
		}
	}
	for _, name := range e.spec.Baselines {
		r := play(t, e, weak, name)
		if r.Metrics[core.MetricMakespan] <= 0 || r.Metrics[core.MetricReferenceMakespan] <= 0 {
			t.Errorf("%s: makespan %v reference %v", name, r.Metrics[core.MetricMakespan], r.Metrics[core.MetricReferenceMakespan])
		}
		t.Logf("%-16s pass %.2f class %v makespan %.1f tokens %v dollars %.4f calls %v runs %v", name, r.Metrics[core.MetricPassRate], r.Metrics[MetricClassPass], r.Metrics[core.MetricMakespan], r.Metrics[core.MetricTokens], r.Metrics[MetricDollars], r.Metrics[MetricReplayedCalls], r.Metrics[MetricExampleRuns])
	}
}

// The rate limit queues parallel calls.
func TestFakeRateLimit(t *testing.T) {
	withStrengths(t)
	free := fakeEnv(t, map[string]any{"split": "all", "tokens_per_minute": 0, "requests_per_minute": 0})
	tight := fakeEnv(t, map[string]any{"split": "all", "requests_per_minute": 1})
	a := play(t, free, 4, BaselineParallelNaive)
	b := play(t, tight, 4, BaselineParallelNaive)
	if a.Metrics[MetricQueueS] != 0 || b.Metrics[MetricQueueS] < 60 || b.Metrics[core.MetricMakespan] < a.Metrics[core.MetricMakespan]+60 {
		t.Errorf("queue %v/%v s, makespan %v/%v s without/with 1 request a minute", a.Metrics[MetricQueueS], b.Metrics[MetricQueueS], a.Metrics[core.MetricMakespan], b.Metrics[core.MetricMakespan])
	}
}

// Bad params are errors that name the key.
func TestBadParams(t *testing.T) {
	for _, c := range []struct {
		params map[string]any
		key    string
	}{
		{map[string]any{"pool": []any{"GPT-4", "NoSuchModel"}, "agents": 2}, `"pool[1]"`},
		{map[string]any{"pool": []any{"GPT-5"}}, `key "pool[0]": model "GPT-5" is not in the model table`}, // before "agents: 3, want at most the 1 models"
		{map[string]any{"agents": 9}, `"agents"`},
		{map[string]any{"split": "test"}, `"split"`},
		{map[string]any{"tokens_per_minute": -1}, `"tokens_per_minute"`},
		{map[string]any{"dataset": "x.json"}, `"outputs_dir"`},
		{map[string]any{"agentz": 2}, `agentz`},
	} {
		_, err := New(c.params)
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("%v: err = %v, want one naming %s", c.params, err, c.key)
		}
	}
}

// playFunc plays one episode in which decide gives every free agent's
// decision (busy agents wait) and returns its last result.
func playFunc(t *testing.T, e *Env, seed uint64, decide func(i int) int) core.StepResult {
	t.Helper()
	return playJoint(t, e, seed, func() []int { return e.freeActs(decide) })
}

// write_class writes every unclaimed method in one call, charged the whole
// reply; methods a teammate claimed while it ran keep the teammate's code.
func TestFakeWriteClass(t *testing.T) {
	withStrengths(t)
	e := fakeEnv(t, map[string]any{"split": "all"})
	seed := seedWhere(t, e, func() bool { return e.agents[e.bestClassWriter()].model.Name == "GPT-4" })
	w := e.bestClassWriter()
	if !e.mask(w)[decWriteClass] {
		t.Fatal("write_class is not legal for GPT-4 at the start")
	}
	// Alone: one call, every method from GPT-4's c_t0.
	r := playFunc(t, e, seed, func(i int) int {
		if i == w && e.legal(i, decWriteClass) {
			return decWriteClass
		}
		if i == w || e.someoneBusy(i) {
			return decWait
		}
		return decSubmit
	})
	var res episodeResult
	if err := json.Unmarshal(r.Artifacts["results.json"], &res); err != nil {
		t.Fatal(err)
	}
	for _, m := range res.Methods {
		if m.Source != "GPT-4/c_t0" || m.Owner != w {
			t.Errorf("alone: %s from %s, owner %d; want GPT-4/c_t0 by coder%d", m.Method, m.Source, m.Owner, w)
		}
	}
	pt := e.be.Tokens(e.classPrompt())
	if r.Metrics[MetricReplayedCalls] != 1 || r.Metrics[core.MetricTokens] != float64(pt+400) || r.Metrics[core.MetricPassRate] != 1 {
		t.Errorf("alone: %v calls, %v tokens (want 1 and %d), pass %v", r.Metrics[MetricReplayedCalls], r.Metrics[core.MetricTokens], pt+400, r.Metrics[core.MetricPassRate])
	}
	if e.mask(w)[decWriteClass] {
		t.Error("write_class still legal with every method written")
	}
	// With a teammate implementing from the front meanwhile.
	other := (w + 1) % len(e.agents)
	r = playFunc(t, e, seed, func(i int) int {
		switch {
		case i == w && e.legal(i, decWriteClass) && len(e.samples) == 0:
			return decWriteClass
		case i == other && e.legal(i, decImplement) && e.methods[0].owner < 0:
			return decImplement
		case e.someoneBusy(i):
			return decWait
		}
		return decSubmit
	})
	if err := json.Unmarshal(r.Artifacts["results.json"], &res); err != nil {
		t.Fatal(err)
	}
	for j, m := range res.Methods {
		want := "GPT-4/c_t0"
		if j == 0 {
			want = res.Team[other] + "/m_dire"
		}
		if m.Source != want {
			t.Errorf("mixed: %s from %s, want %s", m.Method, m.Source, want)
		}
	}
	if r.Metrics[MetricReplayedCalls] != 2 {
		t.Errorf("mixed: %v calls, want 2", r.Metrics[MetricReplayedCalls])
	}
}

// repair and take_over target a failing method whose failure is not an
// example fault before one whose failure is.
func TestFailingTargetPrefersCodeFailures(t *testing.T) {
	withStrengths(t)
	e := fakeEnv(t, map[string]any{"split": "all"})
	e.Reset(4)
	for j, m := range e.methods {
		m.owner, m.hasCode, m.version, m.tested = 0, true, 1, 1
		m.rec = &recording{Source: "m_dire", Code: "bad", OK: true}
		m.source = e.agents[0].model.Name + "/m_dire"
		m.used[m.source] = true
		switch j {
		case 0:
			m.kinds = [4]int{0, 1, 0, 2} // cosmetic and example errors only: an example fault
		case 1:
			m.kinds = [4]int{1, 0, 0, 0} // a wrong output
		default:
			m.pass = true
		}
	}
	if !exampleFault(e.methods[0]) || exampleFault(e.methods[1]) {
		t.Fatalf("exampleFault: %v, %v", exampleFault(e.methods[0]), exampleFault(e.methods[1]))
	}
	if j := e.repairable(0); j != 1 {
		t.Errorf("repairable = %d, want 1 (the wrong output) before 0 (an example fault)", j)
	}
	if j := e.takeable(1); j != 1 {
		t.Errorf("takeable = %d, want 1", j)
	}
	e.methods[1].pass = true
	if j := e.repairable(0); j != 0 {
		t.Errorf("repairable = %d, want 0 once it is the only failing method", j)
	}
}

// A fix-up rule drafts every method first, then tests them all and
// rewrites the failing ones once.
func TestFixupRule(t *testing.T) {
	withStrengths(t)
	e := fakeEnv(t, map[string]any{"split": "all"})
	weak := seedWhere(t, e, func() bool { return e.agents[e.strongest()].model.Name == "ChatGPT" })
	r := rule{share: 0.9, test: testAfter, rewrites: 1}
	firstRun, lastWrite := -1.0, 0.0
	res := playJoint(t, e, weak, func() []int {
		acts := r.act(e)
		for i, d := range acts {
			switch {
			case !e.free(i):
			case d == decRunExamples && firstRun < 0:
				firstRun = e.now
			case d == decImplement || d == decImplementReady:
				lastWrite = e.now
			}
		}
		return acts
	})
	// ChatGPT's skeleton code is wrong: every method fails its examples and
	// is rewritten once (m_iter or c_t0: right).
	if res.Metrics[MetricRewrites] != 3 || res.Metrics[core.MetricPassRate] != 1 || res.Metrics[MetricExampleRuns] < 6 {
		t.Errorf("fix-up: %v rewrites, pass %v, %v example runs; want 3, 1, ≥ 6", res.Metrics[MetricRewrites], res.Metrics[core.MetricPassRate], res.Metrics[MetricExampleRuns])
	}
	if firstRun < lastWrite {
		t.Errorf("fix-up: examples ran at %.1f s, before the last method was claimed at %.1f s", firstRun, lastWrite)
	}
}

// Every episode reports its class as core.MetricTask: the class's
// position in the dataset, the same for every seed that draws it, which
// the spec's TaskNames name by task id.
func TestTaskMetricNamesTheClass(t *testing.T) {
	e := fakeEnv(t, map[string]any{"split": "all"})
	names := e.Spec().TaskNames
	seen := map[int]bool{}
	for seed := range uint64(12) {
		if _, err := e.Reset(seed); err != nil {
			t.Fatal(err)
		}
		id := e.cls.ID
		res := play(t, e, seed, BaselineSingleAgent)
		k := int(res.Metrics[core.MetricTask])
		if float64(k) != res.Metrics[core.MetricTask] || k < 0 || k >= len(names) || names[k] != id {
			t.Fatalf("seed %d played %s but reports task %v", seed, id, res.Metrics[core.MetricTask])
		}
		seen[k] = true
	}
	if len(seen) < 2 {
		t.Fatalf("12 seeds drew %d class(es); the test needs several", len(seen))
	}
}

// A class whose imports the sandbox's interpreter lacks is refused, naming
// the module, the class and what to install; leaving it out with
// "classes" plays the rest.
func TestMissingModulesRefused(t *testing.T) {
	f := newFake()
	f.tasks[2].Missing = []string{"numpy"}
	f.tasks[6].Missing = []string{"numpy", "troupe_private"}
	p := DefaultParams()
	p.Pool = []string{"GPT-4", "ChatGPT", "Vicuna", "CodeGeeX"}
	_, err := newEnv(p, f)
	var missing *missingModulesError
	if !errors.As(err, &missing) {
		t.Fatalf("newEnv: %v, want a *missingModulesError", err)
	}
	for _, want := range []string{"2 of the 8 classes", "numpy (ClassEval_2, ClassEval_6)", "troupe_private (ClassEval_6)", "apt-get install python3-numpy; and provide troupe_private to /usr/bin/python3", `params key "classes"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	p.Classes = []string{"ClassEval_0", "ClassEval_1", "ClassEval_3", "ClassEval_4", "ClassEval_5", "ClassEval_7"}
	if _, err := newEnv(p, f); err != nil {
		t.Errorf("without the classes that need them: %v", err)
	}
}

// A class whose canonical solution fails its own tests is refused, naming
// it and how it fails, with the "classes" setting that plays the others.
func TestCanonicalFailureRefused(t *testing.T) {
	f := newFake()
	f.canonicalFails = map[int]string{3: "fails a: AssertionError"}
	p := DefaultParams()
	p.Pool = []string{"GPT-4", "ChatGPT", "Vicuna", "CodeGeeX"}
	_, err := newEnv(p, f)
	if err == nil {
		t.Fatal("newEnv accepted a class whose canonical solution fails")
	}
	msg := err.Error()
	for _, want := range []string{"1 of the 8 classes", "ClassEval_3 (fails a: AssertionError)", `env.params.classes=["ClassEval_0","ClassEval_1","ClassEval_2","ClassEval_4",`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not say %q", msg, want)
		}
	}
	_, list, _ := strings.Cut(msg, "env.params.classes=")
	var classes []string
	if err := json.Unmarshal([]byte(strings.TrimSuffix(list, "'")), &classes); err != nil {
		t.Fatalf("the suggested setting %q: %v", list, err)
	}
	p.Classes = classes
	if _, err := newEnv(p, f); err != nil || slices.Contains(classes, "ClassEval_3") {
		t.Errorf("with the suggested classes %v: %v", classes, err)
	}
}

// "classes" plays exactly the classes it lists (it used to play every
// class after the last one listed as well).
func TestClassesParamPlaysExactlyThose(t *testing.T) {
	e := fakeEnv(t, map[string]any{"classes": []any{"ClassEval_1", "ClassEval_2"}})
	if !slices.Equal(e.train, []int{2}) || !slices.Equal(e.held, []int{1}) {
		t.Errorf("classes [ClassEval_1 ClassEval_2]: training tasks %v, held-out %v; want [2] and [1]", e.train, e.held)
	}
}

// A reply that is visibly broken (here Vicuna's m_dire: no code of the
// method) is a failing method on sight: repair and take_over target it
// without an examples run, the features say so, the writer's context says
// what it read, and the rewrite's prompt says what was wrong.
func TestVisiblyBrokenIsFailing(t *testing.T) {
	withStrengths(t)
	e := fakeEnv(t, map[string]any{"split": "all"})
	seed := seedWhere(t, e, func() bool { return agentOf(e, "Vicuna") >= 0 && agentOf(e, "GPT-4") >= 0 })
	if _, err := e.Reset(seed); err != nil {
		t.Fatal(err)
	}
	v, g := agentOf(e, "Vicuna"), agentOf(e, "GPT-4")
	step := func(who, d int) {
		t.Helper()
		acts := make([]core.Action, len(e.agents))
		acts[who].Decision = d
		if _, err := e.Step(acts); err != nil {
			t.Fatal(err)
		}
	}
	step(v, decImplement)
	for !e.free(v) {
		step(v, decWait)
	}
	m := e.methods[0]
	if !m.broken || !failed(m) || m.tested == m.version || m.failedVersions != 1 {
		t.Fatalf("Vicuna's reply with no code: broken %v, failed %v, tested %d (version %d), failed versions %d; want broken and failing, untested, 1", m.broken, failed(m), m.tested, m.version, m.failedVersions)
	}
	if j := e.repairable(v); j != 0 {
		t.Errorf("repairable(Vicuna) = %d, want 0", j)
	}
	if j := e.takeable(g); j != 0 || !e.masks[g][decTakeOver] {
		t.Errorf("takeable(GPT-4) = %d (take_over legal %v), want 0, legal", j, e.masks[g][decTakeOver])
	}
	f := e.features(g)
	if f[featFailBroken] != 1 || f[featTeamBroken] != 1.0/3 || f[featTakeable] != 1.0/3 || f[featTeamFailing] != 1.0/3 {
		t.Errorf("GPT-4's features: fail broken %v, team broken %v, takeable %v, team failing %v; want 1, 1/3, 1/3, 1/3", f[featFailBroken], f[featTeamBroken], f[featTakeable], f[featTeamFailing])
	}
	if text := e.text(v); !strings.Contains(text, "a reply with no code of the method") {
		t.Errorf("Vicuna's context does not say what it read:\n%s", text)
	}
	if p := e.rewritePrompt(0); !strings.Contains(p, "no code of the method") || strings.Contains(p, "failed its examples") {
		t.Errorf("the rewrite's prompt:\n%s", p)
	}
	step(g, decTakeOver)
	for !e.free(g) {
		step(g, decWait)
	}
	if m.broken || failed(m) || m.writer != g || e.features(g)[featTeamBroken] != 0 {
		t.Errorf("after GPT-4's take-over: broken %v, failed %v, writer %d (GPT-4 is %d)", m.broken, failed(m), m.writer, g)
	}
}

// A rule that does not test hands visibly broken methods to the team's
// strongest (fixStrongest), to every working coder (fixAll), to the
// fastest (fixFastest), or has their writer rewrite them (fixOwn), with no
// examples run; without a fix they are submitted broken.
func TestFixRules(t *testing.T) {
	withStrengths(t)
	e := fakeEnv(t, map[string]any{"split": "all"})
	seed := seedWhere(t, e, func() bool {
		return e.agents[0].model.Name == "Vicuna" && e.agents[e.strongest()].model.Name == "GPT-4"
	})
	results := map[int]core.StepResult{}
	for _, fix := range []int{fixNone, fixOwn, fixStrongest, fixAll, fixFastest} {
		r := rule{share: 0, fix: fix, rewrites: 1}
		results[fix] = playJoint(t, e, seed, func() []int { return r.act(e) })
		if runs := results[fix].Metrics[MetricExampleRuns]; runs != 0 {
			t.Errorf("%s: %v example runs, want 0", r, runs)
		}
	}
	none, own, best, all, fast := results[fixNone].Metrics, results[fixOwn].Metrics, results[fixStrongest].Metrics, results[fixAll].Metrics, results[fixFastest].Metrics
	if fast[MetricRewrites] == 0 {
		t.Errorf("fixFastest: no rewrite")
	}
	fastest := rule{fix: fixFastest}.fixer(e, e.strongest())
	for k, a := range e.agents {
		if a.model.DecodeTPS > e.agents[fastest].model.DecodeTPS {
			t.Errorf("fixFastest's fixer is %s (%.1f tok/s); %s is faster (%.1f)", e.agents[fastest].model.Name, e.agents[fastest].model.DecodeTPS, e.agents[k].model.Name, a.model.DecodeTPS)
		}
	}
	if fastest == e.strongest() {
		t.Errorf("fixFastest's fixer is the strongest, %s: the test's team should have a faster coder", e.agents[fastest].model.Name)
	}
	if none[MetricRewrites] != 0 || own[MetricRewrites] == 0 || own[MetricTakeOvers] != 0 || best[MetricTakeOvers] == 0 || all[MetricRewrites] == 0 {
		t.Errorf("rewrites / take-overs: none %v/%v, own %v/%v, strongest %v/%v, all %v/%v; want 0/0, >0/0, >0 take-overs, >0 rewrites",
			none[MetricRewrites], none[MetricTakeOvers], own[MetricRewrites], own[MetricTakeOvers], best[MetricRewrites], best[MetricTakeOvers], all[MetricRewrites], all[MetricTakeOvers])
	}
	if !(none[MetricBrokenShare] > 0 && best[MetricBrokenShare] < none[MetricBrokenShare]) {
		t.Errorf("broken share: no fix %v, strongest fixes %v; want some without fixes, fewer with", none[MetricBrokenShare], best[MetricBrokenShare])
	}
	var res episodeResult
	if err := json.Unmarshal(results[fixNone].Artifacts["results.json"], &res); err != nil {
		t.Fatal(err)
	}
	replies := map[string]int{}
	for _, m := range res.Methods {
		replies[m.Reply]++
	}
	if replies[string(suite.NotExtracted)] == 0 {
		t.Errorf("results.json without fixes: replies %v, want Vicuna's %q", replies, suite.NotExtracted)
	}
	if !(best[core.MetricPassRate] > none[core.MetricPassRate]) {
		t.Errorf("pass rate: strongest fixes %v, no fix %v; want more with the fixes (GPT-4's code is right)", best[core.MetricPassRate], none[core.MetricPassRate])
	}
}
