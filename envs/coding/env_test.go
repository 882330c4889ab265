package coding

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
)

func newEnv(t testing.TB, params map[string]any) *Env {
	t.Helper()
	e, err := New(params)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestSpec(t *testing.T) {
	e := newEnv(t, nil)
	s := e.Spec()
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range s.Decisions {
		names = append(names, d.Name)
	}
	if want := []string{"wait", "implement", "run_tests", "repair", "review_peer", "submit"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("decisions %v, want %v", names, want)
	}
	if s.NumAgents() != 6 || s.ObsSize != obsSize || s.StateSize != 5*8+2*6+2 {
		t.Fatalf("spec %+v", s)
	}
	for _, b := range s.Baselines {
		if _, err := e.Baseline(b); err != nil {
			t.Error(err)
		}
	}
	if _, err := e.Baseline("oracle"); err == nil || !strings.Contains(err.Error(), "oracle") {
		t.Errorf("unknown baseline: %v", err)
	}
	// The env implements the optional runtime interfaces.
	var _ core.Prompter = e
	var _ core.Simulator = e
	var _ core.BaselineProvider = e
	var _ core.Truncater = e
}

func TestRegisteredAndBadParams(t *testing.T) {
	src, err := core.LoadEnv(context.Background(), core.SourceRef{Scheme: "builtin", Path: "coding", Params: map[string]any{"functions": 3, "agents": 2}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := src.Open()
	if err != nil {
		t.Fatal(err)
	}
	if env.Spec().NumAgents() != 2 {
		t.Fatalf("agents %d", env.Spec().NumAgents())
	}
	for _, tc := range []struct {
		params map[string]any
		want   string
	}{
		{map[string]any{"functoins": 3}, `unknown key "functoins"`},
		{map[string]any{"functions": "8"}, `"functions"`},
		{map[string]any{"functions": 0}, `"functions"`},
		{map[string]any{"functions": 500}, "1..164"},
		{map[string]any{"agents": 0}, `"agents"`},
		{map[string]any{"p_correct": 1.5}, `"p_correct"`},
		{map[string]any{"decode_tps": 0}, `"decode_tps"`},
		{map[string]any{"timeout_s": -1}, `"timeout_s"`},
		{map[string]any{"interpreter": "python3"}, "absolute path"},
		{map[string]any{"dataset": "/nonexistent.jsonl"}, "nonexistent.jsonl"},
	} {
		_, err := New(tc.params)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("params %v: want error containing %q, got %v", tc.params, tc.want, err)
		}
	}
}

func TestResetIsDeterministicAndMasksStart(t *testing.T) {
	e := newEnv(t, nil)
	obs, err := e.Reset(7)
	if err != nil {
		t.Fatal(err)
	}
	ids := func() []string {
		var out []string
		for _, f := range e.fns {
			out = append(out, f.info.task.TaskID)
		}
		return out
	}
	first := ids()
	if _, err := e.Reset(8); err != nil {
		t.Fatal(err)
	}
	if reflect.DeepEqual(first, ids()) {
		t.Fatal("seeds 7 and 8 drew the same project")
	}
	obs2, _ := e.Reset(7)
	if !reflect.DeepEqual(first, ids()) || !reflect.DeepEqual(obs, obs2) {
		t.Fatal("the same seed must give the same project and observations")
	}
	for i, o := range obs {
		if len(o.Features) != obsSize {
			t.Fatalf("features %d", len(o.Features))
		}
		want := []bool{true, true, false, false, false, false}
		if !reflect.DeepEqual(o.Mask, want) {
			t.Fatalf("agent %d start mask %v, want only wait and implement", i, o.Mask)
		}
		if o.Features[featFree] != 1 || o.Features[featUnclaimed] != 1 || o.Features[featAnyUnclaimed] != 1 {
			t.Fatalf("start features %v", o.Features)
		}
		for _, x := range o.Features {
			if x < 0 || x > 1 {
				t.Fatalf("feature out of [0,1]: %v", o.Features)
			}
		}
	}
	// Longest prompt first.
	for j := 1; j < len(e.fns); j++ {
		if len(e.fns[j].info.task.Prompt) > len(e.fns[j-1].info.task.Prompt) {
			t.Fatal("backlog not ordered longest prompt first")
		}
	}
}

// step runs one joint action through Prompt, Simulate and Step.
func step(t *testing.T, e *Env, rng *rand.Rand, acts ...int) core.StepResult {
	t.Helper()
	actions := make([]core.Action, len(acts))
	for i, d := range acts {
		actions[i].Decision = d
		if decisionSpecs[d].NeedsText {
			req := e.Prompt(i, d)
			c, err := e.Simulate(i, d, req, rng)
			if err != nil {
				t.Fatal(err)
			}
			actions[i].Text = c.Text
			actions[i].Usage = core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Latency: simLatency(c)}
		}
	}
	res, err := e.Step(actions)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestVirtualClockAndLegality(t *testing.T) {
	e := newEnv(t, map[string]any{"functions": 3, "agents": 2, "p_correct": 1.0})
	if _, err := e.Reset(3); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	// Both implement: each claims a different function; the clock moves to
	// the first to finish.
	req0 := e.Prompt(0, decImplement)
	req1 := e.Prompt(1, decImplement)
	if req0.Messages[1].Content == req1.Messages[1].Content {
		t.Fatal("two agents prompted to implement the same function")
	}
	c0, _ := e.Simulate(0, decImplement, req0, rng)
	c1, _ := e.Simulate(1, decImplement, req1, rng)
	lat0, lat1 := 3*time.Second, 5*time.Second
	res, err := e.Step([]core.Action{
		{Decision: decImplement, Text: c0.Text, Usage: core.Usage{PromptTokens: 100, CompletionTokens: 50, Latency: lat0}},
		{Decision: decImplement, Text: c1.Text, Usage: core.Usage{PromptTokens: 100, CompletionTokens: 50, Latency: lat1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if e.now != 3 {
		t.Fatalf("clock %v, want 3 (the first agent's latency)", e.now)
	}
	// Agent 1 is busy: only wait is legal for it.
	if m := res.Observations[1].Mask; !reflect.DeepEqual(m, []bool{true, false, false, false, false, false}) {
		t.Fatalf("busy agent mask %v", m)
	}
	if res.Observations[1].Features[featFree] != 0 {
		t.Fatal("busy agent reported free")
	}
	// Agent 0's function has landed and is testable; agent 1's is not yet
	// visible to agent 0 as written.
	if !res.Observations[0].Legal(decRunTests) || res.Observations[0].Legal(decSubmit) {
		t.Fatalf("agent 0 mask %v", res.Observations[0].Mask)
	}
	if res.Observations[0].Legal(decReviewPeer) {
		t.Fatal("a function still being written must not be reviewable")
	}
	if _, err := e.Step([]core.Action{{Decision: decWait}, {Decision: decImplement}}); err == nil || !strings.Contains(err.Error(), "agent 1") {
		t.Fatalf("an illegal decision must be an error naming the agent, got %v", err)
	}
	// Agent 0 runs its examples (0.5 s virtual): the clock moves to 3.5.
	res = step(t, e, rng, decRunTests, decWait)
	if e.now != 3.5 || e.testRuns != 1 {
		t.Fatalf("clock %v, test runs %d", e.now, e.testRuns)
	}
	if !strings.Contains(res.Observations[0].Text, "examples passed") {
		t.Fatalf("test output missing from the agent's context:\n%s", res.Observations[0].Text)
	}
	if strings.Contains(res.Observations[1].Text, "examples passed") {
		t.Fatal("agent 0's test output leaked into agent 1's context")
	}
	if _, err := e.Step([]core.Action{{Decision: decWait}}); err == nil {
		t.Fatal("a wrong number of actions must be an error")
	}
	if _, err := e.Step([]core.Action{{Decision: 9}, {Decision: decWait}}); err == nil {
		t.Fatal("an out-of-range decision must be an error")
	}
}

func TestClaimConflictWastesTheCall(t *testing.T) {
	e := newEnv(t, map[string]any{"functions": 1, "agents": 2})
	if _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	step(t, e, rng, decImplement, decImplement)
	if e.conflicts != 1 || e.llmCalls != 2 {
		t.Fatalf("conflicts %d, llm calls %d; want 1 and 2", e.conflicts, e.llmCalls)
	}
	if e.fns[0].owner != 0 {
		t.Fatalf("owner %d, want agent 0 (prompted first)", e.fns[0].owner)
	}
}

func TestWaitWithNobodyBusyAdvancesClock(t *testing.T) {
	e := newEnv(t, map[string]any{"functions": 2, "agents": 2, "wait_s": 2.5})
	if _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	step(t, e, rand.New(rand.NewPCG(1, 1)), decWait, decWait)
	if e.now != 2.5 {
		t.Fatalf("clock %v, want 2.5", e.now)
	}
}

func TestUnclaimedPromptReleasedWhenActionDiffers(t *testing.T) {
	e := newEnv(t, map[string]any{"functions": 2, "agents": 1})
	if _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	e.Prompt(0, decImplement)
	if e.unclaimed() != 1 {
		t.Fatal("Prompt must claim")
	}
	if _, err := e.Step([]core.Action{{Decision: decWait}}); err != nil {
		t.Fatal(err)
	}
	if e.unclaimed() != 2 {
		t.Fatal("a claim whose action was not carried out must be released")
	}
}

func TestHiddenTestsNeverShown(t *testing.T) {
	e := newEnv(t, map[string]any{"p_correct": 0.3})
	var texts []string
	obs, err := e.Reset(11)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(11, 0))
	pol := func(obs []core.Observation) []int {
		acts := featurePolicy(policyRepairs)(obs)
		// Free agents with nothing else review once in a while.
		for i, o := range obs {
			if acts[i] == decSubmit && o.Legal(decReviewPeer) && rng.IntN(2) == 0 {
				acts[i] = decReviewPeer
			}
		}
		return acts
	}
	var res core.StepResult
	for !res.Done() {
		for _, o := range obs {
			texts = append(texts, o.Text)
		}
		acts := pol(obs)
		actions := make([]core.Action, len(acts))
		for i, d := range acts {
			actions[i].Decision = d
			if decisionSpecs[d].NeedsText {
				req := e.Prompt(i, d)
				for _, m := range req.Messages {
					texts = append(texts, m.Content)
				}
				c, err := e.Simulate(i, d, req, rng)
				if err != nil {
					t.Fatal(err)
				}
				actions[i].Text, actions[i].Usage = c.Text, core.Usage{PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens, Latency: simLatency(c)}
			}
		}
		if res, err = e.Step(actions); err != nil {
			t.Fatal(err)
		}
		obs = res.Observations
	}
	all := strings.Join(texts, "\n")
	if e.testRuns == 0 || e.llmCalls < len(e.fns) {
		t.Fatalf("the episode did too little to check: %d test runs, %d calls", e.testRuns, e.llmCalls)
	}
	for _, f := range e.fns {
		for _, line := range strings.Split(f.info.task.Test, "\n") {
			line = strings.TrimSpace(line)
			if len(line) < 25 || !strings.HasPrefix(line, "assert") {
				continue
			}
			if strings.Contains(all, line) {
				t.Fatalf("hidden test line of %s reached an agent: %q", f.info.task.TaskID, line)
			}
		}
		if strings.Contains(all, "def check(") {
			t.Fatal("a hidden check function reached an agent")
		}
	}
}

func TestEpisodeMetricsAndArtifacts(t *testing.T) {
	e := newEnv(t, nil)
	res := playEpisode(t, e, 5, featurePolicy(policyRepairs))
	if !res.Terminated || res.Truncated {
		t.Fatalf("terminated %v truncated %v", res.Terminated, res.Truncated)
	}
	for _, k := range e.Spec().Metrics {
		if _, ok := res.Metrics[k]; !ok {
			t.Errorf("metric %q missing", k)
		}
	}
	m := res.Metrics
	if m["functions"] != 8 || m["pass_rate"] < 0 || m["pass_rate"] > 1 || m["makespan_s"] <= 0 || m["reference_makespan_s"] <= 0 ||
		m["tokens"] <= m["reference_tokens"]/2 || m["llm_calls"] < 8 || m["test_runs"] < 8 {
		t.Fatalf("metrics %v", m)
	}
	var results []functionResult
	if err := json.Unmarshal(res.Artifacts["results.json"], &results); err != nil {
		t.Fatal(err)
	}
	passed := 0
	for _, r := range results {
		if r.HiddenPass {
			passed++
		}
		if !r.Written || r.Owner < 0 {
			t.Errorf("function %s not written", r.TaskID)
		}
	}
	if float64(passed)/8 != m["pass_rate"] {
		t.Fatalf("results.json has %d passes, pass_rate %v", passed, m["pass_rate"])
	}
	sol := string(res.Artifacts["solution.py"])
	for _, f := range e.fns {
		if !strings.Contains(sol, f.info.task.Prompt+f.completion) {
			t.Fatalf("solution.py lacks %s", f.info.task.TaskID)
		}
	}
	// The same seed and policy reproduce the episode exactly.
	res2 := playEpisode(t, e, 5, featurePolicy(policyRepairs))
	if !reflect.DeepEqual(res.Metrics, res2.Metrics) || string(res.Artifacts["solution.py"]) != string(res2.Artifacts["solution.py"]) {
		t.Fatalf("replay differs:\n%v\n%v", res.Metrics, res2.Metrics)
	}
	if _, err := e.Step(make([]core.Action, 6)); err == nil {
		t.Fatal("Step after the end must be an error")
	}
	if len(e.State()) != e.Spec().StateSize {
		t.Fatal("state size")
	}
}

func TestCanonicalTeamPassesEverything(t *testing.T) {
	e := newEnv(t, map[string]any{"p_correct": 1.0})
	res := playEpisode(t, e, 2, baselinePolicy(t, e, "parallel_naive"))
	if res.Metrics["pass_rate"] != 1 {
		t.Fatalf("canonical solutions: pass rate %v, want 1\n%s", res.Metrics["pass_rate"], res.Artifacts["results.json"])
	}
	e = newEnv(t, map[string]any{"p_correct": 0.0, "mutants_per_function": 1})
	res = playEpisode(t, e, 2, baselinePolicy(t, e, "parallel_naive"))
	if res.Metrics["pass_rate"] >= 0.5 {
		t.Fatalf("all mutants: pass rate %v, want well below 0.5", res.Metrics["pass_rate"])
	}
}

func TestTruncate(t *testing.T) {
	e := newEnv(t, map[string]any{"functions": 2, "agents": 2, "p_correct": 1.0})
	if _, err := e.Truncate(); err == nil {
		t.Fatal("Truncate before Reset must be an error")
	}
	if _, err := e.Reset(4); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 4))
	step(t, e, rng, decImplement, decWait)
	res, err := e.Truncate()
	if err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.Terminated || res.Metrics["pass_rate"] != 0.5 {
		t.Fatalf("truncated result %+v", res.Metrics)
	}
	if !strings.Contains(string(res.Artifacts["solution.py"]), "raise NotImplementedError") {
		t.Fatal("the unwritten function should be marked in solution.py")
	}
}

func TestMaxStepsTruncates(t *testing.T) {
	e := newEnv(t, map[string]any{"functions": 1, "agents": 1, "max_steps": 3})
	if _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	step(t, e, rng, decWait)
	step(t, e, rng, decWait)
	if res := step(t, e, rng, decWait); !res.Truncated || res.Metrics == nil {
		t.Fatalf("want truncation at max_steps, got %+v", res)
	}
}

func TestReviewCanFixAPeer(t *testing.T) {
	e := newEnv(t, map[string]any{"functions": 1, "agents": 2, "p_correct": 0.0, "p_review_fix": 1.0})
	if _, err := e.Reset(9); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(9, 9))
	step(t, e, rng, decImplement, decWait)
	for !e.fns[0].hasCode {
		step(t, e, rng, decWait, decWait)
	}
	if e.fns[0].canonical {
		t.Fatal("p_correct 0 wrote the canonical solution")
	}
	step(t, e, rng, decWait, decReviewPeer)
	for !e.free(1) {
		step(t, e, rng, decWait, decWait)
	}
	f := e.fns[0]
	if !f.canonical || f.reviews != 1 || f.version != 2 || f.reviewedAt[1] != 2 {
		t.Fatalf("after a fixing review: canonical %v reviews %d version %d", f.canonical, f.reviews, f.version)
	}
	if e.reviewable(1) >= 0 {
		t.Fatal("a function just reviewed is not reviewable again until it changes")
	}
}

func TestRealLLMTextIsAcceptedRobustly(t *testing.T) {
	e := newEnv(t, map[string]any{"functions": 1, "agents": 1})
	if _, err := e.Reset(1); err != nil {
		t.Fatal(err)
	}
	task := e.fns[0].info.task
	req := e.Prompt(0, decImplement)
	if !strings.Contains(req.Messages[1].Content, task.Prompt) {
		t.Fatal("the implement prompt must hold the task prompt")
	}
	// A chatty answer with a full function in a fence, no usage reported.
	text := "Sure! Here is the implementation:\n\n```python\n" + task.Prompt + task.CanonicalSolution + "```\nHope this helps."
	if _, err := e.Step([]core.Action{{Decision: decImplement, Text: text}}); err != nil {
		t.Fatal(err)
	}
	for !e.free(0) {
		step(t, e, nil, decWait)
	}
	if e.llmCalls != 1 || e.tokens == 0 || e.now <= e.p.BaseLatencyS {
		t.Fatalf("without reported usage the env's latency model applies: now %v tokens %d", e.now, e.tokens)
	}
	res := step(t, e, nil, decRunTests)
	for !e.free(0) {
		res = step(t, e, nil, decWait)
	}
	if !e.fns[0].pass {
		t.Fatalf("a full function in a fence should pass its examples:\n%s", e.fns[0].output)
	}
	res = step(t, e, nil, decSubmit)
	if res.Metrics["pass_rate"] != 1 {
		t.Fatalf("pass rate %v", res.Metrics["pass_rate"])
	}
}

// TestEarlyExitDoesNotPass: code that ends the process with status 0 before
// check() has run (a real LLM's stray exit()) fails the hidden tests, while
// the same code without the exit passes.
func TestEarlyExitDoesNotPass(t *testing.T) {
	for _, c := range []struct {
		name, tail string
		pass       bool
	}{
		{"correct", "", true},
		{"correct but chatty", "\nfor i in range(20000):\n    print('debug', i)\n", true},
		{"sys.exit", "\nimport sys\nsys.exit(0)\n", false},
		{"exit", "\nexit()\n", false},
		{"os._exit", "\nimport os\nos._exit(0)\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, map[string]any{"functions": 1, "agents": 1})
			if _, err := e.Reset(1); err != nil {
				t.Fatal(err)
			}
			task := e.fns[0].info.task
			text := "```python\n" + task.Prompt + task.CanonicalSolution + c.tail + "```"
			if _, err := e.Step([]core.Action{{Decision: decImplement, Text: text}}); err != nil {
				t.Fatal(err)
			}
			for !e.free(0) {
				step(t, e, nil, decWait)
			}
			res := step(t, e, nil, decSubmit)
			if got := res.Metrics["pass_rate"] == 1; got != c.pass {
				t.Fatalf("pass rate %v, want pass %v; artifacts:\n%s", res.Metrics["pass_rate"], c.pass, res.Artifacts["solution.py"])
			}
		})
	}
}
