// Package coding is the built-in collaborative coding task "coding": a team
// of coder agents implements a small project of Python functions drawn from
// HumanEval, and the episode is scored by running each function's hidden
// tests for real in a sandbox (internal/sandbox).
//
// # Episode
//
// A seed draws Params.Functions distinct tasks (default 8) from the dataset
// (the embedded HumanEval, MIT, or any file in its JSONL schema given as
// env.params.dataset). Params.Agents coders (default 6) share the backlog.
// Each agent's decisions are:
//
//	wait         idle until the next moment some agent becomes free
//	implement    claim the next unclaimed function and write it (LLM text)
//	run_tests    run the examples of the agent's first function (in
//	             backlog order) whose current code is untested, for real in
//	             the sandbox; the output lands in the agent's context
//	repair       rewrite the agent's first function whose examples failed,
//	             given the failing output (LLM text)
//	review_peer  read the least-reviewed teammate's function this agent
//	             has not read in its current version, without running it,
//	             and fix it if it looks wrong (LLM text)
//	submit       declare the agent's work done; it then only waits
//
// The visible tests of a function are the examples in its docstring:
// `>>>` doctests and the `f(x) ==> y` call lines that most other HumanEval
// prompts use, kept only where the canonical solution passes them (a few
// prompts state wrong examples). The hidden `test` field never reaches an
// agent: it is used only at the end, where pass_rate = the fraction of
// functions for which `prompt + completion + test + check(entry_point)`
// runs check to its end and exits 0 in the sandbox (a completion that exits
// early with status 0 does not pass).
//
// # Time
//
// The clock is virtual and event-driven. A text decision keeps its agent
// busy for the LLM call's latency (Action.Usage.Latency; the sim backend
// models it as base + prompt_tokens/prefill_tps + completion_tokens/
// decode_tps, by default 0.8 s + p/2000 + c/40, and the env uses the same
// model, from its params, when a backend reports no latency). A test run
// keeps it busy for Params.TestCostS (0.5 s by default: a fixed, documented
// virtual cost for the tool round trip — start Python, run a few examples,
// read the result — since measured CPU time is not deterministic) and charges the tokens of its output, which the agent
// reads. Each Step starts the decisions of the free agents, then moves the
// clock to the next moment some agent becomes free and lands the work that
// finished by then (code becomes visible to teammates when it is written,
// not when it is started). Busy and submitted agents have only wait legal.
// When nobody is busy and some agent waits, the clock moves by Params.WaitS.
// The episode ends when every agent has submitted; makespan_s is the clock
// then.
//
// # Speedup cap
//
// Work units are whole functions, so with F functions and N agents the
// speedup over one agent is capped at about F/ceil(F/N) when functions take
// equal time: 4× for 8 functions and 4 agents, and still 4× with the
// default 6 agents (two rounds of work either way), 8× with 8 agents. In
// practice it is lower, because solution lengths vary (HumanEval's canonical
// solutions run from 1 to 30 lines) and repairs are random; the default of 6
// agents gives the slack that an agent stuck repairing needs. Measured on
// seeds 1–100 with the simple feature policy of calibrate_test.go: 3.53×
// with the defaults; with test_cost_s = 1, 3.64× with 6 agents and 3.15×
// with 4. The backlog is ordered longest prompt first, which the agents can
// see, so that long functions start early.
//
// # Observations and artifacts
//
// An agent's 18 features, each in [0, 1], are in order: whether it can act
// now (neither busy nor submitted); whether it has submitted; the
// unclaimed functions / F; whether any function is unclaimed; whether one
// of its functions has untested code; whether one failed its examples;
// whether a teammate's function awaits its review; its functions / F; its
// functions whose examples pass / F; the repairs tried on its failing
// function / 4; then the team's view: the functions with code, whose
// examples pass, whose examples fail, and the teammates' functions whose
// examples fail (each / F); busy agents / N; submitted agents / N; the
// clock / reference_makespan_s / 2; and tokens / reference_tokens / 4
// (values above 1 are clipped).
//
// The last step's artifacts are "solution.py", the project as one Python
// file, and "results.json", one object per function in backlog order:
// task_id, entry_point, owner (the agent that claimed it, −1 if nobody
// did), written, examples_pass and examples (its docstring examples' last
// verdict and count), hidden_pass and hidden_result (the hidden tests'
// verdict and the sandbox's account of the run), versions, repairs and
// reviews.
//
// # References
//
// reference_makespan_s is what one agent takes to implement every function
// once: Σ over functions of (base + prompt_tokens/prefill_tps +
// completion_tokens/decode_tps) for the implement prompt and the canonical
// solution, with the env's latency params. reference_tokens is the same
// work's tokens, Σ (prompt_tokens + completion_tokens). Tokens are counted
// by a deterministic estimate of a cl100k-like BPE tokenizer (about 3.3
// characters per token on HumanEval's Python).
//
// # Simulated coder
//
// With the sim backend the env's Simulate writes the text: the canonical
// solution, or a mutant of it (one small, realistic mistake: a comparison,
// arithmetic or logical operator swapped, a constant off by one, a boolean
// flipped, a return value or a statement replaced) drawn from a fixed pool
// per function (Params.MutantsPerFunction), so that a training run meets a
// finite set of programs and the sandbox cache soon answers everything. An
// implementation is correct with probability PCorrect (0.5); a repair
// fixes the code with probability PRepairFix (0.6) and otherwise writes
// another mutant; a review fixes a wrong function with probability
// PReviewFix (0.15) and breaks a correct one with probability PReviewBreak
// (0.05). Mutants that still pass every hidden test count as correct.
package coding

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/codetokens"
	"github.com/troupe-dev/troupe/internal/eventclock"
	"github.com/troupe-dev/troupe/internal/sandbox"
)

// Name is the env's registered name.
const Name = "coding"

func init() {
	core.RegisterSandboxedEnv(Name, func(params map[string]any, sb core.Sandbox) (core.Env, error) { return NewSandboxed(params, sb) })
}

// The decisions, indexing Spec().Decisions.
const (
	decWait = iota
	decImplement
	decRunTests
	decRepair
	decReviewPeer
	decSubmit
	numDecisions
)

var decisionSpecs = []core.DecisionSpec{
	{Name: "wait"},
	{Name: "implement", NeedsText: true},
	{Name: "run_tests"},
	{Name: "repair", NeedsText: true},
	{Name: "review_peer", NeedsText: true},
	{Name: "submit"},
}

// The observation features, each scaled to [0, 1].
const (
	featFree         = iota // 1 if the agent can act now (not busy, not submitted)
	featSubmitted           // 1 if the agent has submitted
	featUnclaimed           // unclaimed functions / F
	featAnyUnclaimed        // 1 if some function is unclaimed
	featCanTest             // 1 if one of its functions has untested code
	featCanRepair           // 1 if one of its functions failed its examples
	featCanReview           // 1 if a teammate's function awaits its review
	featOwned               // its functions / F
	featOwnPassing          // its functions whose examples pass / F
	featRepairs             // repairs already tried on its failing function / 4, at most 1
	featTeamWritten         // functions with code / F
	featTeamPassing         // functions whose examples pass / F
	featTeamFailing         // functions whose examples fail / F
	featPeerFailing         // teammates' functions whose examples fail / F
	featBusy                // busy agents / N
	featDone                // submitted agents / N
	featTime                // clock / reference_makespan_s / 2, at most 1
	featTokens              // tokens / reference_tokens / 4, at most 1
	obsSize                 // the number of features
)

// Params are the env's params (env.params in the agentfile).
type Params struct {
	// Dataset is a HumanEval-schema .jsonl or .jsonl.gz file; empty means
	// the embedded HumanEval.
	Dataset string `json:"dataset"`
	// Functions is the number of functions in a project (default 8).
	Functions int `json:"functions"`
	// Agents is the number of coders (default 6; see the package comment
	// on the speedup cap).
	Agents int `json:"agents"`
	// PCorrect is the sim's chance that an implementation is the canonical
	// solution rather than a mutant (default 0.5).
	PCorrect float64 `json:"p_correct"`
	// PRepairFix is the sim's chance that a repair with failing output
	// fixes the function (default 0.6).
	PRepairFix float64 `json:"p_repair_fix"`
	// PReviewFix is the sim's chance that a review fixes a wrong function
	// (default 0.15); PReviewBreak that it breaks a correct one (0.05).
	PReviewFix   float64 `json:"p_review_fix"`
	PReviewBreak float64 `json:"p_review_break"`
	// MutantsPerFunction bounds the sim's pool of mutants per function
	// (default 24; 0 keeps every mutant).
	MutantsPerFunction int `json:"mutants_per_function"`
	// TestCostS is the virtual seconds a test run takes (default 0.5).
	TestCostS float64 `json:"test_cost_s"`
	// WaitS is how far the clock moves when nobody is busy and an agent
	// waits (default 1).
	WaitS float64 `json:"wait_s"`
	// BaseLatencyS, PrefillTPS and DecodeTPS are the latency model used for
	// the references, and for text decisions whose backend reports no
	// latency (defaults 0.8 s, 2000 and 40 tokens/s, as the sim backend's).
	BaseLatencyS float64 `json:"base_latency_s"`
	PrefillTPS   float64 `json:"prefill_tps"`
	DecodeTPS    float64 `json:"decode_tps"`
	// OutputChars bounds the test output put in an agent's context
	// (default 2000).
	OutputChars int `json:"output_chars"`
	// Interpreter is the Python that runs programs (default
	// /usr/bin/python3, always with -I).
	Interpreter string `json:"interpreter"`
	// TimeoutS is the sandbox's wall timeout per program (default 2); the
	// CPU limit is the same.
	TimeoutS float64 `json:"timeout_s"`
	// MaxSteps ends an episode early (truncated); default 60 × Functions.
	MaxSteps int `json:"max_steps"`
}

// DefaultParams returns the defaults.
func DefaultParams() Params {
	return Params{
		Functions: 8, Agents: 6,
		PCorrect: 0.5, PRepairFix: 0.6, PReviewFix: 0.15, PReviewBreak: 0.05,
		MutantsPerFunction: 24,
		TestCostS:          0.5, WaitS: 1,
		BaseLatencyS: 0.8, PrefillTPS: 2000, DecodeTPS: 40,
		OutputChars: 2000,
		Interpreter: "/usr/bin/python3",
		TimeoutS:    2,
	}
}

func (p *Params) validate(ds *Dataset) error {
	bad := func(key string, v any, want string) error {
		return fmt.Errorf("params: key %q: %v, want %s", key, v, want)
	}
	switch {
	case p.Functions < 1 || p.Functions > len(ds.Tasks):
		return bad("functions", p.Functions, fmt.Sprintf("1..%d (the tasks in %s)", len(ds.Tasks), ds.Name))
	case p.Agents < 1 || p.Agents > 64:
		return bad("agents", p.Agents, "1..64")
	case p.MutantsPerFunction < 0:
		return bad("mutants_per_function", p.MutantsPerFunction, "≥ 0")
	case !(p.TestCostS >= 0):
		return bad("test_cost_s", p.TestCostS, "≥ 0")
	case !(p.WaitS > 0):
		return bad("wait_s", p.WaitS, "> 0")
	case !(p.BaseLatencyS >= 0):
		return bad("base_latency_s", p.BaseLatencyS, "≥ 0")
	case !(p.PrefillTPS > 0):
		return bad("prefill_tps", p.PrefillTPS, "> 0")
	case !(p.DecodeTPS > 0):
		return bad("decode_tps", p.DecodeTPS, "> 0")
	case p.OutputChars < 100:
		return bad("output_chars", p.OutputChars, "≥ 100")
	case !(p.TimeoutS > 0) || p.TimeoutS > 600:
		return bad("timeout_s", p.TimeoutS, "in (0, 600]")
	case p.MaxSteps < 0:
		return bad("max_steps", p.MaxSteps, "≥ 0")
	}
	for _, pr := range []struct {
		key string
		v   float64
	}{{"p_correct", p.PCorrect}, {"p_repair_fix", p.PRepairFix}, {"p_review_fix", p.PReviewFix}, {"p_review_break", p.PReviewBreak}} {
		if !(pr.v >= 0 && pr.v <= 1) {
			return bad(pr.key, pr.v, "a probability in [0, 1]")
		}
	}
	if p.MaxSteps == 0 {
		p.MaxSteps = 60 * p.Functions
	}
	return nil
}

// Env is the coding task. Use New; an Env serves one goroutine at a time.
type Env struct {
	p    Params
	ds   *Dataset
	sb   *sandbox.Sandbox
	spec core.EnvSpec

	seed      uint64
	started   bool
	now       float64
	steps     int
	fns       []*function
	agents    []*agent
	slots     []*eventclock.Slot // advance's scratch: the agents' slots
	masks     [][]bool
	tokens    int
	llmCalls  int
	testRuns  int
	conflicts int
	refTime   float64
	refTokens int
	final     *core.StepResult
}

// function is one function of the project.
type function struct {
	info        *taskInfo
	owner       int  // -1 while unclaimed
	writing     bool // claimed, its first implementation not yet written
	hasCode     bool
	completion  string
	canonical   bool // the code is the canonical solution (sim ground truth)
	version     int  // bumped by every change of the code
	tested      int  // the version of the last finished test run, -1 if none
	pass        bool // that run's verdict
	output      string
	repairs     int // repairs since the examples last passed
	allRepairs  int
	reviews     int
	reviewedAt  []int // per agent: the version it last reviewed, -1 if none
	implementer int
}

// agent is one coder.
type agent struct {
	eventclock.Slot // busy until BusyUntil, when Effect lands the agent's work
	submitted       bool
	pend            *pending
	notes           []string // the agent's own context: what it did and read
}

// pending is a text decision prepared by Prompt: what it works on and the
// request the agent's LLM gets.
type pending struct {
	decision int
	fn       int // -1: nothing to work on (every function was claimed)
	version  int
	req      core.ChatRequest
}

// New makes the env from its params (see Params; unknown keys are errors),
// with the default sandbox settings (full isolation).
func New(params map[string]any) (*Env, error) {
	return NewSandboxed(params, core.Sandbox{})
}

// NewSandboxed is New with the agentfile's [env.sandbox]: its isolation
// and read_only_dirs apply to the Python sandbox that runs the code.
func NewSandboxed(params map[string]any, sbc core.Sandbox) (*Env, error) {
	p := DefaultParams()
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, fmt.Errorf("env coding: %w", err)
	}
	var ds *Dataset
	var err error
	if p.Dataset == "" {
		ds, err = HumanEval()
	} else {
		ds, err = LoadDataset(p.Dataset)
	}
	if err != nil {
		return nil, fmt.Errorf("env coding: %w", err)
	}
	if err := p.validate(ds); err != nil {
		return nil, fmt.Errorf("env coding: %w", err)
	}
	sb, err := sharedSandbox(p.Interpreter, p.TimeoutS, sbc)
	if err != nil {
		return nil, fmt.Errorf("env coding: %w", err)
	}
	e := &Env{p: p, ds: ds, sb: sb}
	names := make([]string, p.Agents)
	for i := range names {
		names[i] = fmt.Sprintf("coder%d", i)
	}
	e.spec = core.EnvSpec{
		Name:      Name,
		Agents:    names,
		ObsSize:   obsSize,
		Decisions: slices.Clone(decisionSpecs),
		StateSize: 5*p.Functions + 2*p.Agents + 2,
		Metrics: []string{core.MetricPassRate, core.MetricMakespan, core.MetricReferenceMakespan, core.MetricTokens, core.MetricReferenceTokens,
			core.MetricLLMCalls, "test_runs", "functions", "visible_pass_rate", "repairs", "reviews", "claim_conflicts"},
		Baselines:         []string{BaselineSingleAgent, BaselineParallelNaive, BaselineSOP},
		ReferenceBaseline: BaselineSingleAgent,
		Capabilities:      core.CapTruncate | core.CapPrompt | core.CapSimulate | core.CapBaseline,
		MaxSteps:          p.MaxSteps,
	}
	return e, nil
}

// Params returns the env's params with defaults filled in.
func (e *Env) Params() Params { return e.p }

// Spec describes the env.
func (e *Env) Spec() core.EnvSpec { return e.spec }

// Close releases nothing: the sandbox is shared by the process's envs.
func (e *Env) Close() error { return nil }

// Reset draws a project for seed and returns the first observations.
func (e *Env) Reset(seed uint64) ([]core.Observation, error) {
	rng := rand.New(rand.NewPCG(seed, 0x636f64696e67)) // "coding"
	idx := rng.Perm(len(e.ds.Tasks))[:e.p.Functions]
	infos := make([]*taskInfo, len(idx))
	var wg sync.WaitGroup
	errs := make([]error, len(idx))
	for i, ti := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			infos[i], errs[i] = prepareTask(e.sb, e.ds, &e.ds.Tasks[ti], e.p.MutantsPerFunction)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("env coding: reset %d: %w", seed, err)
	}
	// The backlog: longest prompt first (a visible proxy for effort).
	sort.SliceStable(infos, func(a, b int) bool { return len(infos[a].task.Prompt) > len(infos[b].task.Prompt) })

	e.seed, e.started, e.now, e.steps = seed, true, 0, 0
	e.tokens, e.llmCalls, e.testRuns, e.conflicts = 0, 0, 0, 0
	e.final = nil
	e.fns = make([]*function, len(infos))
	e.refTime, e.refTokens = 0, 0
	for i, info := range infos {
		f := &function{info: info, owner: -1, tested: -1, implementer: -1, reviewedAt: make([]int, e.p.Agents)}
		for a := range f.reviewedAt {
			f.reviewedAt[a] = -1
		}
		e.fns[i] = f
		e.refTime += e.latency(info.refPromptTokens, info.refCompletionTokens)
		e.refTokens += info.refPromptTokens + info.refCompletionTokens
	}
	e.agents = make([]*agent, e.p.Agents)
	for i := range e.agents {
		e.agents[i] = &agent{}
	}
	return e.observe(), nil
}

// latency is the env's model of one LLM call, in seconds.
func (e *Env) latency(promptTokens, completionTokens int) float64 {
	return e.p.BaseLatencyS + float64(promptTokens)/e.p.PrefillTPS + float64(completionTokens)/e.p.DecodeTPS
}

func (e *Env) free(i int) bool {
	a := e.agents[i]
	return !a.submitted && a.BusyUntil <= e.now
}

func (e *Env) unclaimed() int {
	n := 0
	for _, f := range e.fns {
		if f.owner < 0 {
			n++
		}
	}
	return n
}

// The targets of each decision for agent i; -1 when there is none.

func (e *Env) nextUnclaimed() int {
	for j, f := range e.fns {
		if f.owner < 0 {
			return j
		}
	}
	return -1
}

func (e *Env) testable(i int) int {
	for j, f := range e.fns {
		if f.owner == i && f.hasCode && f.tested != f.version {
			return j
		}
	}
	return -1
}

func (e *Env) failing(i int) int {
	for j, f := range e.fns {
		if f.owner == i && f.hasCode && f.tested == f.version && !f.pass {
			return j
		}
	}
	return -1
}

func (e *Env) reviewable(i int) int {
	best := -1
	for j, f := range e.fns {
		if f.owner == i || !f.hasCode || f.reviewedAt[i] == f.version {
			continue
		}
		if best < 0 || f.reviews < e.fns[best].reviews {
			best = j
		}
	}
	return best
}

func (e *Env) mask(i int) []bool {
	m := make([]bool, numDecisions)
	m[decWait] = true
	if !e.free(i) {
		return m
	}
	m[decImplement] = e.nextUnclaimed() >= 0
	m[decRunTests] = e.testable(i) >= 0
	m[decRepair] = e.failing(i) >= 0
	m[decReviewPeer] = e.reviewable(i) >= 0
	m[decSubmit] = !m[decImplement]
	return m
}

func (e *Env) observe() []core.Observation {
	obs := make([]core.Observation, len(e.agents))
	e.masks = make([][]bool, len(e.agents))
	for i := range e.agents {
		e.masks[i] = e.mask(i)
		obs[i] = core.Observation{Features: e.features(i), Text: e.contextText(i), Mask: e.masks[i]}
	}
	return obs
}

func clip01(x float64) float64 { return math.Max(0, math.Min(1, x)) }

func (e *Env) features(i int) []float64 {
	x := make([]float64, obsSize)
	F, N := float64(len(e.fns)), float64(len(e.agents))
	a := e.agents[i]
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	x[featFree] = b(e.free(i))
	x[featSubmitted] = b(a.submitted)
	un := e.unclaimed()
	x[featUnclaimed] = float64(un) / F
	x[featAnyUnclaimed] = b(un > 0)
	x[featCanTest] = b(e.testable(i) >= 0)
	fail := e.failing(i)
	x[featCanRepair] = b(fail >= 0)
	x[featCanReview] = b(e.reviewable(i) >= 0)
	if fail >= 0 {
		x[featRepairs] = clip01(float64(e.fns[fail].repairs) / 4)
	}
	var owned, ownPass, written, passing, failingN, peerFail float64
	for _, f := range e.fns {
		ok := f.hasCode && f.tested == f.version && f.pass
		bad := f.hasCode && f.tested == f.version && !f.pass
		if f.owner == i {
			owned++
			ownPass += b(ok)
		} else {
			peerFail += b(bad)
		}
		written += b(f.hasCode)
		passing += b(ok)
		failingN += b(bad)
	}
	x[featOwned], x[featOwnPassing] = owned/F, ownPass/F
	x[featTeamWritten], x[featTeamPassing], x[featTeamFailing], x[featPeerFailing] = written/F, passing/F, failingN/F, peerFail/F
	var busy, done float64
	for _, o := range e.agents {
		busy += b(!o.submitted && o.BusyUntil > e.now)
		done += b(o.submitted)
	}
	x[featBusy], x[featDone] = busy/N, done/N
	if e.refTime > 0 {
		x[featTime] = clip01(e.now / e.refTime / 2)
	}
	if e.refTokens > 0 {
		x[featTokens] = clip01(float64(e.tokens) / float64(e.refTokens) / 4)
	}
	return x
}

// contextText is agent i's own context: the board everybody sees and what
// this agent itself wrote, ran and read (its latest notes).
func (e *Env) contextText(i int) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "You are coder%d of %d on a project of %d Python functions. Clock: %.1f s.\n", i, len(e.agents), len(e.fns), e.now)
	sb.WriteString("Board:\n")
	for j, f := range e.fns {
		status := "unclaimed"
		switch {
		case f.owner >= 0 && f.writing:
			status = fmt.Sprintf("coder%d writing", f.owner)
		case f.owner >= 0 && f.tested == f.version && f.pass:
			status = fmt.Sprintf("coder%d, examples pass", f.owner)
		case f.owner >= 0 && f.tested == f.version:
			status = fmt.Sprintf("coder%d, examples fail", f.owner)
		case f.owner >= 0:
			status = fmt.Sprintf("coder%d, written, untested", f.owner)
		}
		fmt.Fprintf(&sb, "  %d. %s: %s\n", j+1, f.info.task.EntryPoint, status)
	}
	a := e.agents[i]
	if n := len(a.notes); n > 0 {
		sb.WriteString("Your recent work:\n")
		for _, note := range a.notes[max(0, n-4):] {
			sb.WriteString(note)
			if !strings.HasSuffix(note, "\n") {
				sb.WriteByte('\n')
			}
		}
	}
	return sb.String()
}

func (a *agent) note(s string) {
	a.notes = append(a.notes, s)
	if len(a.notes) > 16 {
		a.notes = slices.Delete(a.notes, 0, len(a.notes)-16)
	}
}

// systemPrompt opens every request.
const systemPrompt = "You are a Python programmer in a team of coders building a project of several functions. " +
	"Answer with one complete Python function in a single ```python code block and nothing else."

// implementRequest is the request to implement task t.
func implementRequest(t *Task) core.ChatRequest {
	return chatRequest("Implement this function:\n```python\n" + t.Prompt + "```\n")
}

func chatRequest(user string) core.ChatRequest {
	return core.ChatRequest{
		Messages:    []core.Message{{Role: "system", Content: systemPrompt}, {Role: "user", Content: user}},
		MaxTokens:   1024,
		Temperature: 0.2,
	}
}

// Prompt prepares agent's text decision and returns the request for its
// LLM, built from the agent's own context only. For implement it claims
// the next unclaimed function, so that agents prompted after it in the same
// step claim others; when none is left the request asks for nothing and the
// call is wasted (a claim conflict).
func (e *Env) Prompt(agent, decision int) core.ChatRequest {
	p := e.prepare(agent, decision)
	return p.req
}

func (e *Env) prepare(i, decision int) *pending {
	if i < 0 || i >= len(e.agents) || decision < 0 || decision >= numDecisions {
		return &pending{decision: decision, fn: -1}
	}
	a := e.agents[i]
	if a.pend != nil && a.pend.decision == decision {
		return a.pend
	}
	e.release(i)
	p := &pending{decision: decision, fn: -1}
	var req core.ChatRequest
	switch {
	case !e.started || e.final != nil || !e.free(i):
		// Nothing to work on: the agent cannot act now.
	case decision == decImplement:
		p.fn = e.nextUnclaimed()
		if p.fn >= 0 {
			f := e.fns[p.fn]
			f.owner, f.writing, f.implementer = i, true, i
			req = implementRequest(f.info.task)
		}
	case decision == decRepair:
		p.fn = e.failing(i)
		if p.fn >= 0 {
			f := e.fns[p.fn]
			req = chatRequest(fmt.Sprintf("Your implementation of `%s`:\n```python\n%s```\nRunning the examples in its docstring gave:\n```\n%s\n```\nFix the function.\n",
				f.info.task.EntryPoint, f.info.task.Prompt+f.completion, f.output))
		}
	case decision == decReviewPeer:
		p.fn = e.reviewable(i)
		if p.fn >= 0 {
			f := e.fns[p.fn]
			req = chatRequest(fmt.Sprintf("Review coder%d's implementation of `%s` without running it:\n```python\n%s```\nIf it has a bug, answer with the corrected complete function. If it is correct, answer %s and nothing else.\n",
				f.owner, f.info.task.EntryPoint, f.info.task.Prompt+f.completion, noChanges))
		}
	}
	if p.fn >= 0 {
		p.version = e.fns[p.fn].version
	} else {
		req = chatRequest("There is nothing left for you to " + decisionSpecs[decision].Name + ": every function is taken. Answer DONE.")
	}
	req.Agent, req.Decision, req.Tier = i, decisionSpecs[decision].Name, decisionSpecs[decision].Tier
	p.req = req
	a.pend = p
	return p
}

// release undoes the claim of a prepared implement that was not carried
// out (the agent's action turned out to be another decision).
func (e *Env) release(i int) {
	a := e.agents[i]
	if a.pend != nil && a.pend.decision == decImplement && a.pend.fn >= 0 {
		f := e.fns[a.pend.fn]
		if f.writing && f.owner == i {
			f.owner, f.writing, f.implementer = -1, false, -1
		}
	}
	a.pend = nil
}

func requestTokens(req core.ChatRequest) int {
	n := 0
	for _, m := range req.Messages {
		n += codetokens.Count(m.Content) + 4
	}
	return n
}

// Step applies the joint action: the free agents start their decisions,
// the clock moves to the next moment an agent is free, and work finished by
// then lands.
func (e *Env) Step(actions []core.Action) (core.StepResult, error) {
	switch {
	case !e.started:
		return core.StepResult{}, errors.New("env coding: Step before Reset")
	case e.final != nil:
		return core.StepResult{}, errors.New("env coding: Step after the episode ended")
	case len(actions) != len(e.agents):
		return core.StepResult{}, fmt.Errorf("env coding: %d actions for %d agents", len(actions), len(e.agents))
	}
	for i, act := range actions {
		if act.Decision < 0 || act.Decision >= numDecisions {
			return core.StepResult{}, fmt.Errorf("env coding: agent %d: decision %d out of range [0, %d)", i, act.Decision, numDecisions)
		}
		if !e.masks[i][act.Decision] {
			return core.StepResult{}, fmt.Errorf("env coding: agent %d: decision %q is not legal now", i, decisionSpecs[act.Decision].Name)
		}
	}
	e.steps++
	var tests []testJob
	for i, act := range actions {
		a := e.agents[i]
		if !e.free(i) {
			a.pend = nil
			continue
		}
		if a.pend != nil && a.pend.decision != act.Decision {
			e.release(i)
		}
		switch act.Decision {
		case decSubmit:
			a.submitted = true
			a.note(fmt.Sprintf("[%.1f s] submitted", e.now))
		case decImplement, decRepair, decReviewPeer:
			e.startText(i, act)
		case decRunTests:
			if j := e.testable(i); j >= 0 {
				f := e.fns[j]
				tests = append(tests, testJob{agent: i, fn: j, version: f.version, prog: e.visibleProgram(f)})
			}
		}
		a.pend = nil
	}
	if err := e.startTests(tests); err != nil {
		return core.StepResult{}, err
	}
	e.advance()
	if e.allSubmitted() {
		return e.finish(false)
	}
	if e.steps >= e.p.MaxSteps {
		return e.finish(true)
	}
	return core.StepResult{Observations: e.observe()}, nil
}

func (e *Env) allSubmitted() bool {
	for _, a := range e.agents {
		if !a.submitted {
			return false
		}
	}
	return true
}

// startText starts a text decision whose text the runtime obtained.
func (e *Env) startText(i int, act core.Action) {
	a := e.agents[i]
	p := e.prepare(i, act.Decision)
	pt, ct := act.Usage.PromptTokens, act.Usage.CompletionTokens
	if pt == 0 && ct == 0 {
		pt, ct = requestTokens(p.req), codetokens.Count(act.Text)
	}
	lat := act.Usage.Latency.Seconds()
	if lat <= 0 {
		lat = e.latency(pt, ct)
	}
	e.tokens += pt + ct
	e.llmCalls++
	a.BusyUntil = e.now + lat
	name := decisionSpecs[act.Decision].Name
	if p.fn < 0 {
		e.conflicts++
		a.note(fmt.Sprintf("[%.1f s] %s: nothing left to do", e.now, name))
		a.Effect = nil
		return
	}
	f := e.fns[p.fn]
	text, start := act.Text, e.now
	a.Effect = func() {
		completion, ok := extractCompletion(text, f.info.task.EntryPoint)
		switch {
		case act.Decision == decImplement:
			f.writing = false
			f.hasCode = true
			f.version++
			f.completion, f.canonical = completion, ok && sameCode(completion, f.info.task.CanonicalSolution)
			if !ok {
				f.completion = "    pass\n"
			}
			a.note(fmt.Sprintf("[%.1f s] implemented %s", start, f.info.task.EntryPoint))
		case !ok:
			f.reviewedAt[i] = f.version
			if act.Decision == decReviewPeer {
				f.reviews++
			}
			a.note(fmt.Sprintf("[%.1f s] %s %s: no change", start, name, f.info.task.EntryPoint))
		default:
			if act.Decision == decRepair {
				f.repairs++
				f.allRepairs++
			} else {
				f.reviews++
			}
			if !sameCode(completion, f.completion) {
				f.version++
				f.completion, f.canonical = completion, sameCode(completion, f.info.task.CanonicalSolution)
			}
			f.reviewedAt[i] = f.version
			a.note(fmt.Sprintf("[%.1f s] %s %s: rewrote it", start, name, f.info.task.EntryPoint))
		}
	}
}

// sameCode compares two completions ignoring trailing whitespace.
func sameCode(a, b string) bool {
	return strings.TrimRight(a, " \n") == strings.TrimRight(b, " \n")
}

type testJob struct {
	agent, fn, version int
	prog               sandbox.Program
}

// startTests runs the examples of the functions being tested, in parallel,
// and schedules their verdicts.
func (e *Env) startTests(jobs []testJob) error {
	if len(jobs) == 0 {
		return nil
	}
	progs := make([]sandbox.Program, len(jobs))
	for k, j := range jobs {
		progs[k] = j.prog
	}
	res, err := e.sb.RunAll(context.Background(), progs)
	if err != nil {
		return fmt.Errorf("env coding: run tests: %w", err)
	}
	for k, j := range jobs {
		a, f, r := e.agents[j.agent], e.fns[j.fn], res[k]
		out := e.testOutput(r)
		e.testRuns++
		e.tokens += codetokens.Count(out)
		a.BusyUntil = e.now + e.p.TestCostS
		start, version := e.now, j.version
		a.Effect = func() {
			f.tested, f.pass, f.output = version, r.OK(), out
			if r.OK() {
				f.repairs = 0
			}
			a.note(fmt.Sprintf("[%.1f s] ran the examples of %s:\n%s", start, f.info.task.EntryPoint, out))
		}
	}
	return nil
}

// testOutput is what an agent reads of a test run: stdout then stderr, cut
// to Params.OutputChars, and why the run was stopped. It holds nothing that
// varies between runs of the same program (no wall times).
func (e *Env) testOutput(r sandbox.Result) string {
	out := strings.TrimRight(r.Stdout, "\n")
	if s := strings.TrimRight(r.Stderr, "\n"); s != "" {
		if out != "" {
			out += "\n"
		}
		out += s
	}
	if len(out) > e.p.OutputChars {
		out = strings.ToValidUTF8(out[:e.p.OutputChars], "") + "\n[output cut]"
	}
	switch r.Stop {
	case sandbox.StopNone:
	case sandbox.StopTimeout:
		out += fmt.Sprintf("\n[stopped: no answer within the %g s time limit]", e.p.TimeoutS)
	default:
		out += "\n[stopped: " + string(r.Stop) + "]"
	}
	return strings.TrimLeft(out, "\n")
}

// advance moves the clock to the next moment some agent is free (or by
// WaitS when nobody is busy) and lands the work finished by then, in order
// of finishing time, then agent.
func (e *Env) advance() {
	e.slots = e.slots[:0]
	for _, a := range e.agents {
		e.slots = append(e.slots, &a.Slot)
	}
	e.now = eventclock.Advance(e.now, e.p.WaitS, e.allSubmitted(), e.slots)
}

func (e *Env) visibleProgram(f *function) sandbox.Program {
	return sandbox.Program{TaskID: f.info.task.TaskID, Code: f.info.task.Prompt + f.completion, Test: f.info.visible}
}

// hiddenDone is printed by a hidden test program after check() returned;
// it is random per process, so code under test cannot print it.
var hiddenDone = func() string {
	var b [12]byte
	crand.Read(b[:])
	return "troupe: hidden tests done " + hex.EncodeToString(b[:])
}()

// hiddenOutcome judges a hidden test run: it passes when the program exits
// 0 after check() returned. Code that ends the process early with status 0
// (exit(), sys.exit(), os._exit(0) at import) does not pass.
func hiddenOutcome(r sandbox.Result) (pass bool, describe string) {
	switch {
	case !r.OK():
		return false, r.Describe()
	case !strings.Contains(r.Stdout, hiddenDone):
		return false, "exit 0 before the tests ran to the end"
	}
	return true, r.Describe()
}

func (e *Env) hiddenProgram(f *function) sandbox.Program {
	return sandbox.Program{TaskID: f.info.task.TaskID, Code: f.info.task.Prompt + f.completion, Test: f.info.hidden}
}

// Truncate ends the episode now and scores the work done so far.
func (e *Env) Truncate() (core.StepResult, error) {
	if !e.started {
		return core.StepResult{}, errors.New("env coding: Truncate before Reset")
	}
	if e.final != nil {
		return *e.final, nil
	}
	return e.finish(true)
}

// functionResult is the per-function summary in the "results.json" artifact.
type functionResult struct {
	// TaskID and EntryPoint name the function's task.
	TaskID     string `json:"task_id"`
	EntryPoint string `json:"entry_point"`
	// Owner is the agent that claimed the function, -1 if nobody did.
	Owner int `json:"owner"`
	// Written reports that the function has code.
	Written bool `json:"written"`
	// ExamplesPass reports that the last test run of its current code
	// passed its docstring examples; Examples is how many it has.
	ExamplesPass bool `json:"examples_pass"`
	Examples     int  `json:"examples"`
	// HiddenPass reports that its hidden tests pass; HiddenResult is the
	// sandbox's account of that run ("exit 0", "timeout", …) or
	// "not written".
	HiddenPass   bool   `json:"hidden_pass"`
	HiddenResult string `json:"hidden_result"`
	// Versions counts the changes of its code.
	Versions int `json:"versions"`
	// Repairs and Reviews count the repairs and reviews done on it.
	Repairs int `json:"repairs"`
	Reviews int `json:"reviews"`
}

// finish runs the hidden tests of every written function and builds the
// final result.
func (e *Env) finish(truncated bool) (core.StepResult, error) {
	var progs []sandbox.Program
	var which []int
	for j, f := range e.fns {
		if f.hasCode {
			progs = append(progs, e.hiddenProgram(f))
			which = append(which, j)
		}
	}
	res, err := e.sb.RunAll(context.Background(), progs)
	if err != nil {
		return core.StepResult{}, fmt.Errorf("env coding: hidden tests: %w", err)
	}
	results := make([]functionResult, len(e.fns))
	for j, f := range e.fns {
		results[j] = functionResult{TaskID: f.info.task.TaskID, EntryPoint: f.info.task.EntryPoint, Owner: f.owner,
			Written: f.hasCode, ExamplesPass: f.hasCode && f.tested == f.version && f.pass, Examples: len(f.info.examples),
			HiddenResult: "not written", Versions: f.version, Repairs: f.allRepairs, Reviews: f.reviews}
	}
	passed := 0
	for k, j := range which {
		results[j].HiddenPass, results[j].HiddenResult = hiddenOutcome(res[k])
		if results[j].HiddenPass {
			passed++
		}
	}
	var visible, repairs, reviews float64
	for _, r := range results {
		if r.ExamplesPass {
			visible++
		}
		repairs += float64(r.Repairs)
		reviews += float64(r.Reviews)
	}
	F := float64(len(e.fns))
	obs := e.observe()
	sr := core.StepResult{
		Observations: obs,
		Terminated:   !truncated,
		Truncated:    truncated,
		Metrics: map[string]float64{
			core.MetricPassRate:          float64(passed) / F,
			core.MetricMakespan:          e.now,
			core.MetricReferenceMakespan: e.refTime,
			core.MetricTokens:            float64(e.tokens),
			core.MetricReferenceTokens:   float64(e.refTokens),
			core.MetricLLMCalls:          float64(e.llmCalls),
			"test_runs":                  float64(e.testRuns),
			"functions":                  F,
			"visible_pass_rate":          visible / F,
			"repairs":                    repairs,
			"reviews":                    reviews,
			"claim_conflicts":            float64(e.conflicts),
		},
		Artifacts: map[string][]byte{
			"solution.py":  e.solution(results),
			"results.json": resultsJSON(results),
		},
	}
	e.final = &sr
	return sr, nil
}

// State is the global state for centralized training: per function
// (claimed, written, examples pass, correct per the sim's ground truth,
// owner/N), per agent (busy time left / reference, submitted), the clock and
// the tokens, each scaled like the features.
func (e *Env) State() []float64 {
	s := make([]float64, 0, e.spec.StateSize)
	if !e.started {
		return make([]float64, e.spec.StateSize)
	}
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	N := float64(len(e.agents))
	for _, f := range e.fns {
		s = append(s, b(f.owner >= 0), b(f.hasCode), b(f.hasCode && f.tested == f.version && f.pass), b(f.hasCode && f.canonical), float64(f.owner+1)/N)
	}
	for _, a := range e.agents {
		s = append(s, clip01((a.BusyUntil-e.now)/math.Max(e.refTime, 1e-9)), b(a.submitted))
	}
	return append(s, clip01(e.now/math.Max(e.refTime, 1e-9)/2), clip01(float64(e.tokens)/math.Max(float64(e.refTokens), 1)/4))
}
