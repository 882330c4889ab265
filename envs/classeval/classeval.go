package classeval

import (
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/classeval/internal/suite"
	"github.com/troupe-dev/troupe/internal/eventclock"
	"github.com/troupe-dev/troupe/internal/ratelimit"
)

// Name is the env's registered name.
const Name = "classeval"

// Backend is the label of the text behind every result of this env: the
// completions are recorded ones, replayed, not written by an LLM during
// the run and not simulated. The env reports it in its "results.json"
// artifact and as the metric [MetricReplayedCalls].
const Backend = "replay"

func init() {
	core.RegisterEnv(Name, func(params map[string]any) (core.Env, error) { return New(params) })
}

// The env's own metrics (the well-known ones are in core/names.go).
const (
	// MetricClassPass is 1 when every TestCase of the class passes.
	MetricClassPass = "class_pass"
	// MetricDollars is what the episode's calls cost at the model table's
	// prices; MetricReferenceDollars what the reference way of working
	// (see the package comment) costs.
	MetricDollars          = "dollars"
	MetricReferenceDollars = "reference_dollars"
	// MetricReplayedCalls counts the recorded completions the episode
	// replayed (each one an LLM call of the real run); listing it labels
	// the env's results "replay" (core.MetricReplayedCalls).
	MetricReplayedCalls = core.MetricReplayedCalls
	// MetricExampleRuns counts the runs of visible examples.
	MetricExampleRuns = "example_runs"
	// MetricQueueS is the total time calls waited for the team's shared
	// rate limit.
	MetricQueueS = "rate_limit_wait_s"
	// MetricUnextracted counts replayed completions from which no method
	// code could be extracted.
	MetricUnextracted = "unextracted"
	// MetricExamplesPassRate is the fraction of methods whose visible
	// examples passed on their final code.
	MetricExamplesPassRate = "examples_pass_rate"
	// MetricMethods is the class's number of methods.
	MetricMethods = "methods"
	// MetricTakeOvers counts methods taken over from a teammate.
	MetricTakeOvers = "take_overs"
	// MetricRewrites counts repairs and take-overs (second and later
	// versions of a method).
	MetricRewrites = "rewrites"
	// MetricBrokenShare is the share of the class's methods submitted
	// visibly broken: their final reply cut off, a restated stub or no
	// code of the method, or never written.
	MetricBrokenShare = "broken_share"
)

// The decisions, indexing Spec().Decisions.
const (
	decWait = iota
	decImplement
	decImplementReady
	decWriteClass
	decRunExamples
	decRepair
	decTakeOver
	decSubmit
	numDecisions
)

var decisionSpecs = []core.DecisionSpec{
	{Name: "wait"},
	{Name: "implement"},
	{Name: "implement_ready"},
	{Name: "write_class"},
	{Name: "run_examples"},
	{Name: "repair"},
	{Name: "take_over"},
	{Name: "submit"},
}

// The observation features, each in [0, 1].
const (
	featFree            = iota // can act now
	featSubmitted              // has submitted
	featStrength               // own model's strength (see Model table: measured pass rate)
	featStrongest              // own model is the team's strongest
	featCheapest               // own model is the team's cheapest
	featPrice                  // own completion price / the team's highest
	featSpeed                  // own decode speed / the team's fastest
	featHasIter                // own model has in-context (m_iter) completions
	featTeamBest               // the team's best strength
	featTeamMean               // the team's mean strength
	featUnclaimed              // unclaimed methods / M
	featReady                  // unclaimed methods whose dependencies have code / M
	featAnyReady               // some unclaimed method has its dependencies written
	featNextBlocked            // the first unclaimed method has dependencies without code
	featCanTest                // one of its methods has untested code
	featTestHasEx              // that method has visible examples
	featCanRepair              // one of its methods is visibly broken or failed its examples, and it has recordings left
	featRepairLeft             // recordings left for that method / 8
	featOwned                  // its methods / M
	featOwnPassing             // its methods whose examples pass / M
	featTeamWritten            // methods with code / M
	featTeamPassing            // methods whose examples pass / M
	featTeamFailing            // methods visibly broken or whose examples fail / M
	featTakeable               // teammates' failing (or visibly broken) methods it could take over / M
	featTakeWeaker             // one of those was written by a weaker model than its own
	featBusy                   // busy agents / N
	featDone                   // submitted agents / N
	featTime                   // clock / reference makespan / 2
	featTokens                 // tokens / reference tokens / 4
	featDollars                // dollars / reference dollars / 4
	featQueue                  // the team's last rate-limit wait / 30 s
	featClassSize              // M / 10
	featRelStrength            // own strength / the team's best (1 for the strongest)
	featNextExamples           // the first unclaimed method has visible examples
	featNextDeps               // the first unclaimed method depends on other methods
	featClassStrength          // own model's whole-class strength (Model table: measured pass rate of its c_t0 classes)
	featBestClassWriter        // own model is the team's best whole-class writer
	featTeamBestClass          // the team's best whole-class strength
	featCanWriteClass          // write_class is legal: own model has a whole-class sample left and methods are unclaimed
	featFailMismatch           // of the failed examples of the method repair (else take_over) targets: share with a wrong output
	featFailCosmetic           // … share that printed the right value otherwise than the docstring writes it
	featFailCode               // … share that raised in the class's code
	featFailExample            // … share that raised in the example itself (a name or file the docstring assumes)
	featFailedVersions         // versions of that method whose examples failed or that were visibly broken / 3
	featTeamUntested           // methods with code whose current version is untested / M
	featFailBroken             // that method's reply is visibly broken: cut off, a restated stub, or no code
	featTeamBroken             // methods whose current reply is visibly broken / M
	obsSize
)

// Split values of Params.Split.
const (
	SplitBySeed  = "by_seed"
	SplitTrain   = "train"
	SplitHeldOut = "heldout"
	SplitAll     = "all"
)

// Params are the env's params (env.params in the agentfile).
type Params struct {
	// Dataset is a ClassEval-schema file (.json or .json.gz); empty means
	// the shipped 75 classes. Its classes' canonical solutions must pass
	// their tests in the sandbox: New checks the classes to play and
	// refuses those whose do not.
	Dataset string `json:"dataset"`
	// OutputsDir is a directory of MODEL_100_MODE.json.gz files in the
	// layout of ClassEval's outputs; empty means the shipped one.
	OutputsDir string `json:"outputs_dir"`
	// Agents is the team size (default 3).
	Agents int `json:"agents"`
	// Pool lists the models a team is drawn from, without replacement, per
	// task seed (default DefaultPool); each must be in the model table and
	// have m_dire completions.
	Pool []string `json:"pool"`
	// Split selects the classes: "by_seed" (default) plays the training
	// classes on even task seeds (training) and the held-out classes on
	// odd ones (evaluation); "train", "heldout" and "all" fix the set.
	// Held out are the classes whose task number is 1 mod 4 (ClassEval_1,
	// _5, _9, …; for ids without a number, every fourth class of the file
	// from the second).
	Split string `json:"split"`
	// Classes, when set, restricts the dataset to these task ids before
	// the split.
	Classes []string `json:"classes"`
	// RequestsPerMinute and TokensPerMinute are the team's shared rate
	// limit (internal/ratelimit; 0 = none). Defaults 500 and 10000, the
	// limits of an OpenAI usage tier 1 account for gpt-4 (2023).
	RequestsPerMinute int `json:"requests_per_minute"`
	TokensPerMinute   int `json:"tokens_per_minute"`
	// WaitS is how far the clock moves when nobody is busy and an agent
	// waits (default 1).
	WaitS float64 `json:"wait_s"`
	// OutputChars bounds the example output put in an agent's context and
	// in a repair prompt (default 1500).
	OutputChars int `json:"output_chars"`
	// MaxSteps ends an episode early (truncated); default 40 per method
	// of the largest class, at least 200.
	MaxSteps int `json:"max_steps"`
	// CacheDir, when set, keeps the outcome of every sandbox run on disk,
	// keyed by the SHA-256 of the program run and of the interpreter's
	// fingerprint (suite.Interpreter), so that later runs (an evaluation
	// after another on the same seeds) reuse it; "" (the default) keeps
	// them in memory for the process only. The outcomes are
	// deterministic, so the cache changes no result, only the time taken.
	CacheDir string `json:"cache_dir"`
}

// DefaultParams returns the defaults.
func DefaultParams() Params {
	return Params{
		Agents: 3, Pool: slices.Clone(DefaultPool), Split: SplitBySeed,
		RequestsPerMinute: 500, TokensPerMinute: 10000,
		WaitS: 1, OutputChars: 1500,
	}
}

func (p *Params) validate() error {
	bad := func(key string, v any, want string) error {
		return fmt.Errorf("params: key %q: %v, want %s", key, v, want)
	}
	seen := map[string]bool{}
	for i, name := range p.Pool { // a bad name first: it also makes the pool look small
		if seen[name] {
			return bad(fmt.Sprintf("pool[%d]", i), name, "each model once")
		}
		seen[name] = true
		if _, err := modelByName(name); err != nil {
			return fmt.Errorf("params: key \"pool[%d]\": %w", i, err)
		}
	}
	switch {
	case p.Agents < 1 || p.Agents > 16:
		return bad("agents", p.Agents, "1..16")
	case len(p.Pool) == 0:
		return bad("pool", p.Pool, "at least one model")
	case p.Agents > len(p.Pool):
		return bad("agents", p.Agents, fmt.Sprintf("at most the %d models of pool (a team has distinct models)", len(p.Pool)))
	case !slices.Contains([]string{SplitBySeed, SplitTrain, SplitHeldOut, SplitAll}, p.Split):
		return bad("split", p.Split, `"by_seed", "train", "heldout" or "all"`)
	case !(p.WaitS > 0):
		return bad("wait_s", p.WaitS, "> 0")
	case p.OutputChars < 100:
		return bad("output_chars", p.OutputChars, "≥ 100")
	case p.MaxSteps < 0:
		return bad("max_steps", p.MaxSteps, "≥ 0")
	}
	if err := p.rateLimit().Validate(); err != nil {
		se := err.(*core.SettingError) // keyed by the param's name
		return fmt.Errorf("params: key %q: %s", se.Key, se.Msg)
	}
	return nil
}

// rateLimit is the team's shared limit the params set.
func (p *Params) rateLimit() ratelimit.Config {
	return ratelimit.Config{RequestsPerMinute: p.RequestsPerMinute, TokensPerMinute: p.TokensPerMinute}
}

// Env is the ClassEval team-coding task. Use New; an Env serves one
// goroutine at a time.
type Env struct {
	p     Params
	be    backend
	spec  core.EnvSpec
	train []int // indexes of the training classes in be.Tasks()
	held  []int // of the held-out ones
	lim   *ratelimit.Limiter

	// The episode.
	seed      uint64
	started   bool
	task      int
	cls       *classTask
	now       float64
	steps     int
	methods   []*method
	agents    []*agent
	slots     []*eventclock.Slot // advance's scratch: the agents' slots
	masks     [][]bool
	tokens    int
	dollars   float64
	calls     int
	runs      int
	queueS    float64
	lastQueue float64
	unextract int
	samples   map[string]bool // "MODEL/SOURCE" whole-class samples replayed by write_class
	takeOvers int
	rewrites  int
	refTime   float64
	refTokens int
	refUSD    float64
	final     *core.StepResult
}

// method is one method of the episode's class.
type method struct {
	idx     int
	info    classMethod
	owner   int  // -1 while unclaimed
	writing bool // a write is in flight
	hasCode bool
	rec     *recording // the recording behind its code
	source  string     // "MODEL/SOURCE"
	writer  int        // the agent whose model wrote code
	version int
	tested  int  // the version of the last finished example run, -1 if none
	testing bool // an example run is in flight
	pass    bool
	output  string
	// broken reports that the current version is visibly unusable: its
	// reply was cut off mid-code, restates the skeleton's stub or holds
	// no code of the method (suite.ExtractStatus), which its writer sees
	// on reading the reply, without running anything.
	broken bool
	// kinds holds the last finished run's failed examples by kind (wrong
	// output, right value printed otherwise, error in the code, error in
	// the example); failedVersions counts the versions whose examples
	// failed or that were visibly broken.
	kinds          [4]int
	failedVersions int
	used           map[string]bool // "MODEL/SOURCE" recordings already replayed
}

// agent is one coder.
type agent struct {
	model           Model
	strength        float64
	classStrength   float64
	eventclock.Slot // busy until BusyUntil, when Effect lands the agent's work
	submitted       bool
	notes           []string
}

func (a *agent) note(s string) { a.notes = append(a.notes, s) }

// New builds the env from its params.
func New(params map[string]any) (*Env, error) {
	p := DefaultParams()
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, fmt.Errorf("env classeval: %w", err)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("env classeval: %w", err)
	}
	be, err := openBackend(p.Dataset, p.OutputsDir, p.CacheDir)
	if err != nil {
		return nil, fmt.Errorf("env classeval: %w", err)
	}
	return newEnv(p, be)
}

// newEnv builds the env on a backend (tests use a fake one).
func newEnv(p Params, be backend) (*Env, error) {
	for i, name := range p.Pool {
		if !be.HasMode(name, "m_dire") {
			return nil, fmt.Errorf("env classeval: params: key \"pool[%d]\": model %q has no m_dire completions in the outputs directory", i, name)
		}
	}
	e := &Env{p: p, be: be, lim: ratelimit.New(p.rateLimit())}
	tasks := be.Tasks()
	want := map[string]bool{}
	for _, id := range p.Classes {
		want[id] = true
	}
	unknown := maps.Clone(want)
	largest := 0
	for i, t := range tasks {
		if len(want) > 0 && !want[t.ID] {
			continue
		}
		delete(unknown, t.ID)
		if heldOut(t.ID, i) {
			e.held = append(e.held, i)
		} else {
			e.train = append(e.train, i)
		}
		largest = max(largest, len(t.Methods))
	}
	if len(unknown) > 0 {
		return nil, fmt.Errorf("env classeval: params: key \"classes\": %v not in the dataset", slices.Sorted(maps.Keys(unknown)))
	}
	play := slices.Sorted(slices.Values(append(slices.Clone(e.train), e.held...)))
	if err := missingModules(tasks, play); err != nil {
		return nil, err
	}
	if err := canonicalFailures(be, tasks, play); err != nil {
		return nil, err
	}
	switch {
	case (p.Split == SplitTrain || p.Split == SplitBySeed) && len(e.train) == 0:
		return nil, fmt.Errorf("env classeval: params: key \"split\": %q needs training classes, and the dataset has none (held out: task number 1 mod 4); use split = \"all\"", p.Split)
	case (p.Split == SplitHeldOut || p.Split == SplitBySeed) && len(e.held) == 0:
		return nil, fmt.Errorf("env classeval: params: key \"split\": %q needs held-out classes (task number 1 mod 4), and the dataset has none; use split = \"all\"", p.Split)
	}
	if p.MaxSteps == 0 {
		p.MaxSteps = max(200, 40*largest)
		e.p.MaxSteps = p.MaxSteps
	}
	names := make([]string, p.Agents)
	for i := range names {
		names[i] = fmt.Sprintf("coder%d", i)
	}
	baselines := []string{BaselineSingleAgent, BaselineParallelNaive, BaselineSOP, BaselineEscalate, BaselineDepsFirst, BaselineDepsEscalate, BaselineStrongTest, BaselineStrongNaive, BaselineHolistic, BaselineHolisticSplit, BaselineHolisticFix, BaselineStrongByTeam}
	var solo []string
	for _, m := range p.Pool {
		solo = append(solo, soloPrefix+m)
	}
	baselines = append(baselines, solo...)
	e.spec = core.EnvSpec{
		Name:      Name,
		Agents:    names,
		ObsSize:   obsSize,
		Decisions: slices.Clone(decisionSpecs),
		StateSize: obsSize * p.Agents,
		Metrics: []string{core.MetricPassRate, MetricClassPass, core.MetricMakespan, core.MetricReferenceMakespan,
			core.MetricTokens, core.MetricReferenceTokens, MetricDollars, MetricReferenceDollars, MetricReplayedCalls,
			MetricExampleRuns, MetricQueueS, MetricUnextracted, MetricExamplesPassRate, MetricMethods, MetricTakeOvers, MetricRewrites, MetricBrokenShare, core.MetricTask},
		TaskNames:         taskIDs(e.be.Tasks()),
		Baselines:         baselines,
		ReferenceBaseline: BaselineSingleAgent,
		// A solo row swaps in a model the drawn team may not have.
		OutsideTask:  solo,
		Capabilities: core.CapTruncate | core.CapBaseline,
		MaxSteps:     p.MaxSteps,
	}
	return e, nil
}

// taskIDs returns the classes' task ids in dataset order: the names of the
// values the env reports as core.MetricTask.
func taskIDs(tasks []classTask) []string {
	ids := make([]string, len(tasks))
	for i, t := range tasks {
		ids[i] = t.ID
	}
	return ids
}

// heldOut reports whether the class with task id id, at position pos of
// its dataset, is held out of training: its task number is 1 mod 4, or,
// for an id without a number, its position is.
func heldOut(id string, pos int) bool {
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	n := pos
	if i < len(id) && len(id)-i < 9 {
		n = 0
		for _, c := range id[i:] {
			n = 10*n + int(c-'0')
		}
	}
	return n%4 == 1
}

// Params returns the env's params with defaults filled in.
func (e *Env) Params() Params { return e.p }

// Spec describes the env.
func (e *Env) Spec() core.EnvSpec { return e.spec }

// Close releases nothing: the backend is shared by the process's envs.
func (e *Env) Close() error { return nil }

// classes returns the classes a task seed draws from.
func (e *Env) classes(seed uint64) []int {
	switch e.p.Split {
	case SplitTrain:
		return e.train
	case SplitHeldOut:
		return e.held
	case SplitAll:
		return append(slices.Clone(e.train), e.held...)
	}
	if seed%2 == 1 {
		return e.held
	}
	return e.train
}

// Reset draws a class and a team for seed and returns the first
// observations.
func (e *Env) Reset(seed uint64) ([]core.Observation, error) {
	rng := rand.New(rand.NewPCG(seed, 0x636c61737365)) // "classe"
	pool := e.classes(seed)
	e.task = pool[rng.IntN(len(pool))]
	tasks := e.be.Tasks()
	e.cls = &tasks[e.task]
	team := rng.Perm(len(e.p.Pool))[:e.p.Agents]

	e.seed, e.started, e.now, e.steps = seed, true, 0, 0
	e.tokens, e.dollars, e.calls, e.runs, e.queueS, e.lastQueue = 0, 0, 0, 0, 0, 0
	e.unextract, e.takeOvers, e.rewrites = 0, 0, 0
	e.samples = map[string]bool{}
	e.final = nil
	e.lim.Reset()
	e.agents = make([]*agent, e.p.Agents)
	for i, k := range team {
		m, _ := modelByName(e.p.Pool[k])
		e.agents[i] = &agent{model: m, strength: strengthOf(m.Name), classStrength: classStrengthOf(m.Name)}
	}
	e.methods = make([]*method, len(e.cls.Methods))
	for j, info := range e.cls.Methods {
		e.methods[j] = &method{idx: j, info: info, owner: -1, tested: -1, writer: -1, used: map[string]bool{}}
	}
	for i, a := range e.agents {
		a.note(fmt.Sprintf("You are coder%d, backed by %s. The team: %s. The class to implement together is %s (%d methods); its skeleton:\n%s",
			i, a.model.Name, e.teamMakeUp(), e.cls.Name, len(e.methods), e.cls.Skeleton))
	}
	e.reference()
	return e.observe(), nil
}

// teamMakeUp describes the team for the agents' context.
func (e *Env) teamMakeUp() string {
	parts := make([]string, len(e.agents))
	for i, a := range e.agents {
		parts[i] = fmt.Sprintf("coder%d=%s", i, a.model.Name)
	}
	return strings.Join(parts, ", ")
}

// top returns the agent with the highest score (the lowest index among
// equals).
func (e *Env) top(score func(a *agent) float64) int {
	best := 0
	for i, a := range e.agents {
		if score(a) > score(e.agents[best]) {
			best = i
		}
	}
	return best
}

// strongest returns the agent with the strongest model.
func (e *Env) strongest() int { return e.top(func(a *agent) float64 { return a.strength }) }

// bestClassWriter returns the agent whose model writes whole classes best
// (the highest whole-class strength).
func (e *Env) bestClassWriter() int { return e.top(func(a *agent) float64 { return a.classStrength }) }

// reference sets the reference metrics: the team's strongest model
// writing every method once from the skeleton (its m_dire completions),
// one call after another, without tests, queueing or repairs.
func (e *Env) reference() {
	m := e.agents[e.strongest()].model
	e.refTime, e.refTokens, e.refUSD = 0, 0, 0
	for j := range e.methods {
		pt := e.be.Tokens(e.implementPrompt(j, false))
		ct := 0
		if recs := e.be.Recordings(m.Name, e.task, j); len(recs) > 0 {
			ct = recs[0].CompletionTokens
		}
		e.refTime += m.Latency(pt, ct)
		e.refTokens += pt + ct
		e.refUSD += m.Dollars(pt, ct)
	}
}

func (e *Env) free(i int) bool {
	a := e.agents[i]
	return !a.submitted && a.BusyUntil <= e.now
}

// depsWritten reports whether every method j depends on has code.
func (e *Env) depsWritten(j int) bool {
	for _, d := range e.methods[j].info.Deps {
		if d != j && !e.methods[d].hasCode {
			return false
		}
	}
	return true
}

// The targets of each decision for agent i; -1 when there is none.

// nextUnclaimed is implement's target: the first unclaimed method.
func (e *Env) nextUnclaimed() int {
	for j, m := range e.methods {
		if m.owner < 0 {
			return j
		}
	}
	return -1
}

// nextReady is implement_ready's target: the first unclaimed method whose
// dependencies have code, if agent i's model has a recording to write it
// with them in context (m_iter).
func (e *Env) nextReady(i int) int {
	for j, m := range e.methods {
		if m.owner < 0 && e.depsWritten(j) && e.recordingFor(i, j, "m_iter") != nil {
			return j
		}
	}
	return -1
}

// untested reports whether method m has code whose examples have not run
// and nobody is writing or testing it.
func untested(m *method) bool {
	return m.hasCode && !m.writing && !m.testing && m.tested != m.version
}

// testable is run_examples' target: agent i's first method whose current
// code has not been run, else the team's first such method.
func (e *Env) testable(i int) int {
	for j, m := range e.methods {
		if m.owner == i && untested(m) {
			return j
		}
	}
	for j, m := range e.methods {
		if untested(m) {
			return j
		}
	}
	return -1
}

// classSample is write_class's target: the first whole-class sample of
// agent i's model (c_t0, then c_5#0…#4) the team has not replayed, while
// some method is unclaimed; "" when there is none.
func (e *Env) classSample(i int) string {
	if e.nextUnclaimed() < 0 {
		return ""
	}
	name := e.agents[i].model.Name
	for _, src := range e.be.ClassSamples(name, e.task) {
		if !e.samples[name+"/"+src] {
			return src
		}
	}
	return ""
}

// isClassSample reports whether a recording's source is a whole-class
// sample (c_t0 or c_5#K).
func isClassSample(source string) bool { return strings.HasPrefix(source, "c_") }

// failed reports whether method m's current code is visibly broken or
// failed its examples.
func failed(m *method) bool {
	return m.hasCode && !m.writing && (m.broken || (m.tested == m.version && !m.pass))
}

// land makes recording r, replayed as key ("MODEL/SOURCE") by agent i,
// method m's current code: a new version, failing at once when the reply
// is visibly broken.
func (m *method) land(r recording, key string, i int) {
	m.hasCode = true
	m.rec, m.source, m.writer = &r, key, i
	m.version++
	m.broken = visiblyBroken(r)
	if m.broken {
		m.failedVersions++
	}
}

// visiblyBroken reports whether the code of recording r is unusable on
// sight: cut off mid-code, a restated stub, or none.
func visiblyBroken(r recording) bool { return r.status != suite.Extracted }

// onReading is what a coder sees on reading recording r's reply.
func onReading(r recording) string {
	switch r.status {
	case suite.Extracted:
		return "its code"
	case suite.ExtractedTruncated:
		return "a reply cut off mid-code; the method does not compile"
	case suite.ExtractedStub:
		return "a reply that restates the stub; the method does nothing"
	}
	return "a reply with no code of the method; it stays a stub"
}

// exampleFault reports whether every failed example of method m's last
// run either raised in the example itself (a name or a file the docstring
// assumes, a syntax error in it) or printed the right value otherwise than
// the docstring writes it: the failure then says little about the code. A
// visibly broken method's failure is never one.
func exampleFault(m *method) bool {
	return !m.broken && m.kinds[1]+m.kinds[3] > 0 && m.kinds[0] == 0 && m.kinds[2] == 0
}

// firstFailing returns the first failing method (failed) that ok accepts,
// preferring those whose failure is not an example fault; -1 if none.
func (e *Env) firstFailing(ok func(j int, m *method) bool) int {
	fallback := -1
	for j, m := range e.methods {
		if !failed(m) || !ok(j, m) {
			continue
		}
		if !exampleFault(m) {
			return j
		}
		if fallback < 0 {
			fallback = j
		}
	}
	return fallback
}

// repairable is repair's target: agent i's failing method (visibly broken,
// or its examples failed) for which its model has a recording left, the first whose failure
// is not an example fault, else the first.
func (e *Env) repairable(i int) int {
	return e.firstFailing(func(j int, m *method) bool { return m.owner == i && e.nextRecording(i, j) != nil })
}

// takeable is take_over's target: a teammate's failing method that nobody
// is rewriting, and for which agent i's model has a
// recording left, chosen as repair's.
func (e *Env) takeable(i int) int {
	return e.firstFailing(func(j int, m *method) bool {
		return m.owner >= 0 && m.owner != i && e.nextRecording(i, j) != nil
	})
}

// recordingFor returns agent i's model's recording of method j from
// source, if it has one it has not replayed yet.
func (e *Env) recordingFor(i, j int, source string) *recording {
	name := e.agents[i].model.Name
	for _, r := range e.be.Recordings(name, e.task, j) {
		if r.Source == source && !e.methods[j].used[name+"/"+r.Source] {
			return &r
		}
	}
	return nil
}

// nextRecording returns the recording a rewrite of method j by agent i
// replays: its model's first one not replayed yet, in the order m_dire,
// m_iter (only once the method's dependencies have code), c_t0, c_5#0…
func (e *Env) nextRecording(i, j int) *recording {
	name := e.agents[i].model.Name
	for _, r := range e.be.Recordings(name, e.task, j) {
		if e.methods[j].used[name+"/"+r.Source] || (r.Source == "m_iter" && !e.depsWritten(j)) {
			continue
		}
		return &r
	}
	return nil
}

// recordingsLeft counts the recordings of method j agent i has not used.
func (e *Env) recordingsLeft(i, j int) int {
	name := e.agents[i].model.Name
	n := 0
	for _, r := range e.be.Recordings(name, e.task, j) {
		if !e.methods[j].used[name+"/"+r.Source] {
			n++
		}
	}
	return n
}

// The prompts: the text a real call would send, whose tokens are charged.

const systemPrompt = "You are an expert Python programmer. You complete one method of a class at a time."

// implementPrompt is the prompt to write method j from the skeleton, with
// the methods that have code in context when withContext is set.
func (e *Env) implementPrompt(j int, withContext bool) string {
	var b strings.Builder
	b.WriteString(systemPrompt + "\n\nComplete the method `" + e.cls.Methods[j].Name + "` of this class:\n```python\n" + e.cls.Skeleton + "\n```\n")
	if withContext {
		for k, m := range e.methods {
			if k != j && m.hasCode {
				b.WriteString("Already implemented:\n```python\n" + m.rec.Code + "\n```\n")
			}
		}
	}
	return b.String()
}

// classPrompt is the prompt to write the whole class at once.
func (e *Env) classPrompt() string {
	return systemPrompt + "\n\nComplete every method of this class:\n```python\n" + e.cls.Skeleton + "\n```\n"
}

// rewritePrompt is the prompt to write method j again after its examples
// failed, with the failing code and output, or after its reply was visibly
// broken, with what was wrong with it.
func (e *Env) rewritePrompt(j int) string {
	m := e.methods[j]
	previous, why := "A previous implementation:", "failed its examples:\n```\n"+m.output+"\n```\n"
	if m.broken {
		previous, why = "A previous reply gave:", "("+onReading(*m.rec)+")\n"
	}
	return e.implementPrompt(j, false) + previous + "\n```python\n" + m.rec.Code + "\n```\n" + why + "Write the method again.\n"
}

// Step applies the joint action: the free agents start their decisions,
// the clock moves to the next moment an agent is free, and work finished by
// then lands.
func (e *Env) Step(actions []core.Action) (core.StepResult, error) {
	switch {
	case !e.started:
		return core.StepResult{}, errors.New("env classeval: Step before Reset")
	case e.final != nil:
		return core.StepResult{}, errors.New("env classeval: Step after the episode ended")
	case len(actions) != len(e.agents):
		return core.StepResult{}, fmt.Errorf("env classeval: %d actions for %d agents", len(actions), len(e.agents))
	}
	for i, act := range actions {
		if act.Decision < 0 || act.Decision >= numDecisions {
			return core.StepResult{}, fmt.Errorf("env classeval: agent %d: decision %d out of range [0, %d)", i, act.Decision, numDecisions)
		}
		if !e.masks[i][act.Decision] {
			return core.StepResult{}, fmt.Errorf("env classeval: agent %d: decision %q is not legal now", i, decisionSpecs[act.Decision].Name)
		}
	}
	e.steps++
	for i, act := range actions {
		if !e.free(i) {
			continue
		}
		// A target taken by an earlier agent in this same joint action
		// leaves the decision with nothing to do: the agent waits.
		if err := e.start(i, act.Decision); err != nil {
			return core.StepResult{}, err
		}
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

// start starts agent i's decision d at the current time.
func (e *Env) start(i, d int) error {
	a := e.agents[i]
	switch d {
	case decSubmit:
		a.submitted = true
		a.note(fmt.Sprintf("[%.1f s] submitted", e.now))
	case decImplement:
		if j := e.nextUnclaimed(); j >= 0 {
			if r := e.recordingFor(i, j, "m_dire"); r != nil {
				e.write(i, j, *r, e.implementPrompt(j, false), "implemented")
			}
		}
	case decImplementReady:
		if j := e.nextReady(i); j >= 0 {
			e.write(i, j, *e.recordingFor(i, j, "m_iter"), e.implementPrompt(j, true), "implemented (with the written methods in context)")
		}
	case decWriteClass:
		if src := e.classSample(i); src != "" {
			e.writeClass(i, src)
		}
	case decRepair:
		if j := e.repairable(i); j >= 0 {
			e.rewrites++
			e.write(i, j, *e.nextRecording(i, j), e.rewritePrompt(j), "rewrote")
		}
	case decTakeOver:
		if j := e.takeable(i); j >= 0 {
			e.rewrites++
			e.takeOvers++
			prev := e.methods[j].owner
			e.agents[prev].note(fmt.Sprintf("[%.1f s] coder%d took over %s", e.now, i, e.cls.Methods[j].Name))
			e.write(i, j, *e.nextRecording(i, j), e.rewritePrompt(j), fmt.Sprintf("took over from coder%d and rewrote", prev))
		}
	case decRunExamples:
		if j := e.testable(i); j >= 0 {
			return e.runExamples(i, j)
		}
	}
	return nil
}

// call starts one LLM call of agent a with pt prompt and ct completion
// tokens: it waits for the team's rate limit, is charged, and keeps a
// busy for its model's latency.
func (e *Env) call(a *agent, pt, ct int) {
	start := e.lim.Admit(e.now, pt+ct)
	e.lastQueue = start - e.now
	e.queueS += e.lastQueue
	e.tokens += pt + ct
	e.dollars += a.model.Dollars(pt, ct)
	e.calls++
	a.BusyUntil = start + a.model.Latency(pt, ct)
}

// write replays recording r as agent i's implementation of method j: the
// call waits for the team's rate limit, takes its model's latency, and the
// code lands when it ends.
func (e *Env) write(i, j int, r recording, prompt, verb string) {
	a, m := e.agents[i], e.methods[j]
	e.call(a, e.be.Tokens(prompt), r.CompletionTokens)
	m.owner, m.writing = i, true
	key := a.model.Name + "/" + r.Source
	m.used[key] = true
	if !r.OK {
		e.unextract++
	}
	t0 := e.now
	a.Effect = func() {
		m.writing = false
		m.land(r, key, i)
		a.note(fmt.Sprintf("[%.1f s] %s %s (%s): %s\n%s", t0, verb, e.cls.Methods[j].Name, r.Source, onReading(r), r.Code))
	}
}

// writeClass replays whole-class sample src of agent i's model: one call
// whose prompt is the skeleton and whose completion is the whole reply.
// It claims nothing while it runs (teammates may go on writing methods);
// when it ends, the reply's code lands on every method still unclaimed,
// which become agent i's. A method the reply holds no code for stays a
// stub.
func (e *Env) writeClass(i int, src string) {
	a := e.agents[i]
	key := a.model.Name + "/" + src
	e.samples[key] = true
	e.call(a, e.be.Tokens(e.classPrompt()), e.be.ClassSampleTokens(a.model.Name, e.task, src))
	t0 := e.now
	a.Effect = func() {
		var names []string
		for j, m := range e.methods {
			if m.owner >= 0 {
				continue
			}
			r := recording{Source: src, status: suite.NotExtracted} // no code: the stub
			for _, x := range e.be.Recordings(a.model.Name, e.task, j) {
				if x.Source == src {
					r = x
				}
			}
			if !r.OK {
				e.unextract++
			}
			m.owner = i
			m.used[key] = true
			m.land(r, key, i)
			name := e.cls.Methods[j].Name
			if m.broken {
				name += " (" + onReading(r) + ")"
			}
			names = append(names, name)
		}
		what := "every method was taken by then; nothing landed"
		if len(names) > 0 {
			what = "it wrote " + strings.Join(names, ", ")
		}
		a.note(fmt.Sprintf("[%.1f s] wrote the whole class in one call (%s): %s", t0, src, what))
	}
}

// recs returns the recording behind every method's code (nil = stub).
func (e *Env) recs() []*recording {
	out := make([]*recording, len(e.methods))
	for j, m := range e.methods {
		if m.hasCode {
			out[j] = m.rec
		}
	}
	return out
}

// runExamples runs method j's visible examples for agent i in the sandbox,
// with the class as it stands; the verdict lands when the run ends.
func (e *Env) runExamples(i, j int) error {
	a, m := e.agents[i], e.methods[j]
	res, err := e.be.RunExamples(e.task, j, e.recs())
	if err != nil {
		return fmt.Errorf("env classeval: %s: run the examples of %s: %w", e.cls.ID, e.cls.Methods[j].Name, err)
	}
	e.runs++
	m.testing = true
	out := res.Output
	if len(out) > e.p.OutputChars {
		out = strings.ToValidUTF8(out[:e.p.OutputChars], "") + "\n[output cut]"
	}
	a.BusyUntil = e.now + res.DurationS
	version, t0 := m.version, e.now
	a.Effect = func() {
		m.testing = false
		if m.version == version {
			m.tested, m.pass, m.output = version, res.Pass, out
			m.kinds = res.Kinds
			if !res.Pass && !m.broken { // a broken version was counted when it landed
				m.failedVersions++
			}
		}
		verdict := "failed"
		if res.Pass {
			verdict = "passed"
		}
		a.note(fmt.Sprintf("[%.1f s] ran the examples of %s (%d): %s\n%s", t0, e.cls.Methods[j].Name, m.info.Examples, verdict, out))
	}
	return nil
}

func (e *Env) allSubmitted() bool {
	for _, a := range e.agents {
		if !a.submitted {
			return false
		}
	}
	return true
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

// Truncate ends the episode now and scores the work done so far.
func (e *Env) Truncate() (core.StepResult, error) {
	if !e.started {
		return core.StepResult{}, errors.New("env classeval: Truncate before Reset")
	}
	if e.final != nil {
		return *e.final, nil
	}
	return e.finish(true)
}
