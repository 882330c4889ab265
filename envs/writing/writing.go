// Package writing is the collaborative-writing task, registered as the
// built-in env "writing": a team of writer agents, each backed by a model
// tier of its own, writes a Rust RFC (the nine-section RFC template) unit
// by unit, sharing one rate limit. The env reports the final document as
// the artifact "document.md" and does not judge it: its quality is for the
// reward functions to score, normally "writing.consistency" (package
// rewards), which shares no code or definition with this package.
//
// # Task
//
// An episode is one RFC of the corpus (drawn by the seed): the 40
// full-template RFCs shipped in corpus/ (rust-lang/rfcs, MIT OR
// Apache-2.0), or any directory of RFC-style Markdown given as the
// corpus_dir param. The document is cut into work units from the real
// text: every H2 template section's lead text, and every H3 subsection
// (with what lies below it); an H2 with no lead text is merged with its
// first subsection, and unit 0 also carries the H1 title and the RFC's
// metadata list. The final document is the units' current texts joined in
// template order.
//
// # Dependencies between units (from the real text)
//
// The corpus loader reads, from each RFC's own prose, how its units
// depend on each other (deps.go): the RFC's terms (hyphenated compounds
// and recurring two-word phrases used in more than one unit), each
// introduced by the first unit that uses it; the units whose headings a
// unit mentions (cross-references by name or by in-page link); and the
// guide-level units every reference-level unit builds on. A writer who
// drafts a unit without having the current text of what it depends on in
// its prompt produces the failures parallel writers produce (with its
// tier's probabilities): a term written in another surface form than the
// unit that introduced it ("import library" / "import-library"), a
// mention of a heading under the outline's wording while its writer
// worded it otherwise (a reference to a heading that does not exist), and
// one paragraph of a unit it builds on restated (duplicated content).
// Reading the peers' current text first (read_peers: tokens and time)
// puts it in the writer's prompts and prevents them; an edit by a writer
// who has read it repairs them later.
//
// # Writers: tiers, team and rate limit
//
// Each writer is backed by a model tier ([Tier], [BuiltinTiers]): its
// latency (time to first token, prompt and completion throughput), price,
// Markdown habits and error rates. The team is drawn per task seed,
// each writer's tier uniformly from the team_pool param, and so is the
// team's shared rate limit (requests and tokens per minute) from the
// rate_limits param (default [BuiltinRateLimits]). Every call (a draft, an
// edit, a read) passes the limiter (package internal/ratelimit: a FIFO
// queue over a sliding 60-second window) before it starts, so five calls
// at once can queue. A writer's observation shows its own tier, how much
// of the team differs, and how full the rate-limit window is.
//
// # Agents and decisions
//
// Writers default to five. Each sees only its own context: the brief
// (title, the real Summary as the task statement, its team), the outline
// (every unit's heading and length), the shared task board (which unit is
// unclaimed, being written or done, and by whom), and what it has read and
// written itself. Decisions:
//
//	wait           do nothing until the next event
//	read_style     read the house style guide and outline conventions
//	read_peers     read every peer unit done in a version not yet read
//	read_deps      read only the drafted units that draft_ready's target
//	               depends on, where not yet read in their current version
//	draft_longest  claim the longest unclaimed unit and write it (LLM)
//	draft_next     claim the first unclaimed unit in template order (LLM)
//	draft_ready    claim the longest unclaimed unit whose dependencies
//	               are all drafted (LLM)
//	edit_peer      rewrite a peer's unit in the house style with what the
//	               writer has read (LLM; needs read_style): a unit it knows
//	               to be defective (longest first), else a never-edited
//	               peer unit it has not read, in template order; a unit is
//	               edited at most max_edits_per_unit times (default 2)
//	submit         declare itself done (legal once no unit is unclaimed)
//
// A writer knows a unit is defective once it has read its current version
// and the unit departs from the house style or the outline, or writes one
// of the RFC's terms otherwise than the unit that introduced it does,
// mentions a heading its target no longer has, or restates a paragraph
// of a unit it builds on.
//
// Masks: a busy or submitted agent has only wait; read_style is legal
// until read; read_peers and read_deps need something new to read; draft_* need a
// target; edit_peer needs read_style and a target; submit needs every unit
// claimed. When several agents pick targets in one step they are served
// in agent order (Prompt reserves the target); an agent left without a
// target spends its LLM call on nothing.
//
// # Clock
//
// The env owns virtual time and is event-driven: a call issued at t
// starts when the team's limiter admits it (its prompt and completion
// tokens) and lasts its writer's tier latency (base + prompt/prefill +
// completion/decode); with a real LLM backend (Usage.Backend not "sim")
// the call lasts the latency it reports and the provider's own limits
// apply instead. A read lasts base + tokens/prefill of the reader's tier.
// Each Step advances the clock to the next moment an agent becomes free
// (or by idle_wait_s when nobody is busy). makespan_s is the time of the
// last submit. reference_makespan_s is what writer 0 alone takes under the
// same limit: one read_style, then every unit in template order with the
// prompt it would have; the speed reward's normaliser.
//
// # Observations, state and metrics
//
// A writer's 30 features are listed at the Feat constants (feat*). State
// holds the clock, every agent's status and tier, and every unit's status,
// size and known defects. Episode metrics: makespan_s,
// reference_makespan_s, tokens, reference_tokens, llm_calls, units,
// units_drafted, edits, reads, env_tokens, cost_usd (the team's calls at
// their tiers' list prices) and queue_s (seconds calls waited for the rate
// limit). The env reports no quality metric.
//
// Episodes are bounded by the runtime's step limit ([rollout] max_steps);
// the spec sets none of its own.
//
// # Calibration
//
// Every simulation parameter is set from published figures or stated as
// an assumption in [BuiltinTiers] and [BuiltinRateLimits], never fitted to
// a result. TestCalibration (go test -run TestCalibration -v, not in
// -short) plays every baseline on 40 seeds, with the default pool and with
// a team of one tier, and checks what the design claims: one writer takes
// its reference time, parallel drafting without reading is fast but
// clearly less consistent even when every writer is the same model, and
// reading dependencies leaves fewer defects than reading only the style.
// BENCHMARKS.md has the measured tables.
package writing

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/envs/writing/internal/restyle"
	"github.com/troupe-dev/troupe/internal/ratelimit"
)

// Name is the env's registered name ("builtin:writing").
const Name = "writing"

func init() {
	core.RegisterEnv(Name, func(params map[string]any) (core.Env, error) { return New(params) })
}

// Decision indices (EnvSpec.Decisions order).
const (
	decWait = iota
	decReadStyle
	decReadPeers
	decReadDeps
	decDraftLongest
	decDraftNext
	decDraftReady
	decEditPeer
	decSubmit
	numDecisions
)

// Feature indices of Observation.Features. Counts are scaled to O(1).
const (
	featBias           = iota // always 1
	featBusy                  // 1 while the agent works on a decision
	featSubmitted             // 1 once the agent has submitted
	featReadStyle             // 1 once the agent has read the house style
	featClock                 // virtual time / reference_makespan_s
	featUnclaimed             // fraction of units nobody has claimed
	featInProgress            // fraction of units being drafted or edited
	featDone                  // fraction of units drafted
	featLongest               // longest unclaimed unit / mean unit, ÷ 4 (≤ 2)
	featNext                  // first unclaimed unit (template order) / mean unit, ÷ 4 (≤ 2)
	featUnclaimedWork         // unclaimed tokens / all tokens
	featKnownDefective        // peer units known to be defective, ÷ 4 (≤ 1)
	featUnreadPeer            // peer units done whose current version the agent has not read / units
	featPeersBusy             // fraction of the other agents that are busy
	featPeersSubmitted        // fraction of the other agents that have submitted
	featOwnDrafts             // units this agent drafted / units
	featReviewable            // 1 if a never-edited peer unit is unread by this agent
	featTeamSize              // writers / 8
	featEditSize              // the unit edit_peer would take / mean unit, ÷ 4 (≤ 2); 0 if none
	featPeersRemaining        // estimated time until the last busy peer is free / mean unit time, ÷ 4 (≤ 1)
	featReady                 // unclaimed units whose dependencies are all drafted / units
	featLongestBlocked        // 1 if the longest unclaimed unit depends on a unit not drafted yet
	featDepsUnread            // of draft_ready's target's drafted dependencies, the fraction unread by the agent in their current version
	featOwnSpeed              // own tier's decode tokens/s ÷ 100
	featOwnPrice              // own tier's output $/M ÷ 10
	featOwnErrors             // own tier's term-drift probability
	featTeamMixed             // fraction of the other writers on another tier
	featLimitTokens           // tokens charged in the last 60 s ÷ tokens per minute (0 if unlimited; ≤ 1)
	featLimitRequests         // calls started in the last 60 s ÷ requests per minute (0 if unlimited; ≤ 1)
	featLimitTight            // 30 000 ÷ tokens per minute (≤ 1; 0 if unlimited)
	featLongestVsLimit        // the longest unclaimed unit's tokens ÷ tokens per minute, × 10 (≤ 1; 0 if unlimited)
	featDocVsLimit            // the document's tokens ÷ tokens per minute, × 2 (≤ 1; 0 if unlimited)
	numFeatures
)

// The env's own metrics, reported on the last step with the well-known
// core.MetricMakespan, core.MetricReferenceMakespan, core.MetricTokens,
// core.MetricReferenceTokens and core.MetricLLMCalls.
const (
	metricUnits        = "units"
	metricUnitsDrafted = "units_drafted"
	metricEdits        = "edits"
	metricReads        = "reads"
	metricEnvTokens    = "env_tokens"
	metricCostUSD      = "cost_usd"
	metricQueue        = "queue_s"
)

// Baseline names offered through [Env.Baseline].
const (
	BaselineSingleAgent     = "single_agent"
	BaselineParallelNaive   = "parallel_naive"
	BaselineSOP             = "sop"
	BaselineReadOnceLongest = "read_once_longest"
	BaselineReadOnceReady   = "read_once_ready"
	BaselineReadOncePaced   = "read_once_paced"
	BaselineDecentralized   = "decentralized"
	BaselineReadDeps        = "read_deps"
)

// Params are the env's parameters (env.params); the defaults are those of
// [DefaultParams].
type Params struct {
	// CorpusDir is a directory of RFC-style Markdown files to use instead
	// of the shipped corpus ("" = shipped).
	CorpusDir string `json:"corpus_dir"`
	// RFCs restricts the corpus to these files (names with or without
	// ".md"; empty = every RFC of the corpus). Each episode draws one from
	// the seed.
	RFCs []string `json:"rfcs"`
	// Writers is the team size (default 5, 1..16).
	Writers int `json:"writers"`
	// TeamPool names the tiers (of [BuiltinTiers]) each writer's tier is
	// drawn from, uniformly and independently per task seed (default
	// every built-in tier). One name gives a team of one model.
	TeamPool []string `json:"team_pool"`
	// RateLimits are the shared limits a team's limit is drawn from,
	// uniformly per task seed (default [BuiltinRateLimits]); a limit of 0
	// is unlimited.
	RateLimits []ratelimit.Config `json:"rate_limits"`
	// IdleWait is how far the clock moves when every agent waits and
	// nobody is busy (default 1 s).
	IdleWait float64 `json:"idle_wait_s"`
	// MaxEditsPerUnit caps how often one unit may be edited (default 2),
	// so that two writers cannot pass a unit back and forth forever.
	MaxEditsPerUnit int `json:"max_edits_per_unit"`
	// ContextUnits is how many of the units an agent read or wrote most
	// recently its prompts quote in full besides the target's
	// dependencies (default 2); older ones are listed by heading.
	ContextUnits int `json:"context_units"`
	// ErrorScale multiplies every writer error rate of every tier (the
	// chance of not following the house style it has read, of a
	// structure slip, a term drift, a retitled heading, a restated
	// paragraph), each capped at 1 (default 1, valid (0, 10]). A tiny
	// value (1e-9) shows the consistency reachable with no writer errors;
	// habits of writers who have not read the house style are not errors
	// and stay.
	ErrorScale float64 `json:"error_scale"`
}

// DefaultParams returns the parameter defaults.
func DefaultParams() Params {
	var names []string
	for _, t := range BuiltinTiers() {
		names = append(names, t.Name)
	}
	return Params{
		Writers:         5,
		TeamPool:        names,
		RateLimits:      BuiltinRateLimits(),
		IdleWait:        1,
		MaxEditsPerUnit: 2,
		ContextUnits:    2,
		ErrorScale:      1,
	}
}

func (p Params) validate() ([]Tier, error) {
	switch {
	case p.Writers < 1 || p.Writers > 16:
		return nil, fmt.Errorf("params: key \"writers\": want 1..16, got %d", p.Writers)
	case p.ContextUnits < 0 || p.ContextUnits > 64:
		return nil, fmt.Errorf("params: key \"context_units\": want 0..64, got %d", p.ContextUnits)
	case p.MaxEditsPerUnit < 0:
		return nil, fmt.Errorf("params: key \"max_edits_per_unit\": want ≥ 0, got %d", p.MaxEditsPerUnit)
	case !(p.IdleWait > 0) || math.IsInf(p.IdleWait, 0):
		return nil, fmt.Errorf("params: key \"idle_wait_s\": want a positive number, got %v", p.IdleWait)
	case !(p.ErrorScale > 0 && p.ErrorScale <= 10):
		return nil, fmt.Errorf("params: key \"error_scale\": want a multiplier in (0, 10] (1 = the tiers' own error rates), got %v", p.ErrorScale)
	case len(p.TeamPool) == 0:
		return nil, fmt.Errorf("params: key \"team_pool\": want at least one tier (have %s)", tierNames())
	case len(p.RateLimits) == 0:
		return nil, errors.New("params: key \"rate_limits\": want at least one limit ({requests_per_minute = 0, tokens_per_minute = 0} is unlimited)")
	}
	var pool []Tier
	for i, n := range p.TeamPool {
		t, ok := tierByName(n)
		if !ok {
			return nil, fmt.Errorf("params: key \"team_pool\" [%d]: no tier %q (have %s)", i, n, tierNames())
		}
		pool = append(pool, t.scaleErrors(p.ErrorScale))
	}
	for i, l := range p.RateLimits {
		if err := l.Validate(); err != nil {
			// Not wrapped: the agentfile would read the *core.SettingError
			// inside as a key of [env] ("env.tokens_per_minute").
			return nil, fmt.Errorf("params: key \"rate_limits\" [%d]: %v", i, err)
		}
	}
	return pool, nil
}

type unitStatus uint8

const (
	unclaimed unitStatus = iota
	drafting
	done
)

type unitState struct {
	status     unitStatus
	owner      int // agent drafting or editing it now, -1
	text       string
	version    int // 0 until drafted; +1 per draft or edit
	author     int // drafting agent, -1
	lastWriter int // -1
	edits      int
	tokens     int    // tokensOf(text)
	prose      string // proseOf(text)
	// forms holds, for each term the unit uses or introduces, the surface
	// form its prose writes (formInProse; "" if none), set with its text.
	forms     map[int]string
	dev       uint16 // habit deviations from the house style (bit per habit)
	outlineOK bool
	repeatOf  int  // a unit it builds on one of whose paragraphs this text restates, -1
	termBad   bool // writes a term otherwise than its introducing unit's current text
	refBad    bool // mentions a heading its target no longer has
}

// defective reports whether the unit departs from the house style, the
// outline, or what the units it depends on say.
func (u *unitState) defective() bool {
	return u.dev != 0 || !u.outlineOK || u.repeatOf >= 0 || u.termBad || u.refBad
}

type taskKind uint8

const (
	taskNone taskKind = iota
	taskRead
	taskDraft
	taskEdit
	taskNoop // a text decision that found no unit
)

type agentState struct {
	task      taskKind
	unit      int
	startAt   float64 // when the current task started (after any queueing)
	busyUntil float64
	pending   string
	read      bool
	peerReads int // read_peers decisions taken
	submitted bool
	submitAt  float64
	seen      []int          // per unit: the version last read or written by this agent (0 = never)
	seenText  map[int]string // the texts this agent read or wrote, by unit
	recent    []int          // units read or written, oldest first (no repeats)
	drafted   int
}

type reservation struct {
	decision int
	unit     int // -1: nothing left
	ok       bool
}

// refKey is what the single-writer reference depends on: the document,
// writer 0's tier, the rate limit, the length of the style guide and the
// team size the prompts name.
type refKey struct {
	rfc     string
	tier    string
	limit   ratelimit.Config
	guide   int
	writers int
}

type refValue struct {
	makespan float64
	tokens   int
}

// call is one admitted call, for the rate-limit features.
type call struct {
	start  float64
	tokens int
}

// Env is one instance of the writing task. It is not safe for concurrent
// use.
type Env struct {
	p      Params
	pool   []Tier
	corpus []RFC
	// contextHead is the part of every agent's context text that is the
	// same all episode (the team, the rate limit, the brief): contextText.
	contextHead string
	// restatable caches restatableWords per RFC of corpus.
	restatable map[*RFC][]wordSet
	spec       core.EnvSpec
	maxUnits   int

	started, done bool
	rfc           *RFC
	rfcIndex      int // rfc's position in corpus: the episode's core.MetricTask
	house         restyle.Style
	team          []Tier
	limit         ratelimit.Config
	limiter       *ratelimit.Limiter
	calls         []call
	now           float64
	units         []unitState
	agents        []agentState
	reserve       []reservation
	masks         [][]bool   // the masks of the last observations, which actions must respect
	rng           *rand.Rand // for Simulate when the runtime passes none
	usageTokens   int
	charged       int
	usd           float64
	queued        float64
	llmCalls      int
	edits, reads  int
	meanTokens    float64
	refMakespan   float64
	refTokens     int
	guide         string
	brief         string
	refs          map[refKey]refValue // computed references, by what they depend on
}

var decisionSpecs = []core.DecisionSpec{
	{Name: "wait"},
	{Name: "read_style"},
	{Name: "read_peers"},
	{Name: "read_deps"},
	{Name: "draft_longest", NeedsText: true},
	{Name: "draft_next", NeedsText: true},
	{Name: "draft_ready", NeedsText: true},
	{Name: "edit_peer", NeedsText: true},
	{Name: "submit"},
}

// New returns a writing env configured by params (see [Params]).
func New(params map[string]any) (*Env, error) {
	p := DefaultParams()
	if params != nil {
		// Lists replace the defaults rather than merge into them.
		if _, ok := params["team_pool"]; ok {
			p.TeamPool = nil
		}
		if _, ok := params["rate_limits"]; ok {
			p.RateLimits = nil
		}
	}
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, fmt.Errorf("writing: %w", err)
	}
	pool, err := p.validate()
	if err != nil {
		return nil, fmt.Errorf("writing: %w", err)
	}
	var corpus []RFC
	if p.CorpusDir != "" {
		corpus, err = LoadDir(p.CorpusDir, p.RFCs...)
	} else {
		corpus, err = LoadShipped(p.RFCs...)
	}
	if err != nil {
		if len(p.RFCs) > 0 && errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("writing: params: key \"rfcs\": %w", err)
		}
		return nil, fmt.Errorf("writing: %w", err)
	}
	e := &Env{p: p, pool: pool, corpus: corpus}
	for _, r := range corpus {
		e.maxUnits = max(e.maxUnits, len(r.Units))
	}
	agents := make([]string, p.Writers)
	for i := range agents {
		agents[i] = fmt.Sprintf("writer_%d", i)
	}
	e.spec = core.EnvSpec{
		Name:      Name,
		Agents:    agents,
		ObsSize:   numFeatures,
		Decisions: append([]core.DecisionSpec(nil), decisionSpecs...),
		StateSize: stateSize(p.Writers, e.maxUnits),
		Metrics:   metricNames(),
		TaskNames: rfcNames(corpus),
		Baselines: []string{BaselineSingleAgent, BaselineParallelNaive, BaselineSOP,
			BaselineReadOnceLongest, BaselineReadOnceReady, BaselineReadOncePaced, BaselineDecentralized, BaselineReadDeps},
		// The reference metrics estimate one writer's time and tokens.
		ReferenceBaseline: BaselineSingleAgent,
		Capabilities:      core.CapTruncate | core.CapPrompt | core.CapSimulate | core.CapBaseline,
	}
	return e, nil
}

func metricNames() []string {
	return []string{core.MetricMakespan, core.MetricReferenceMakespan, core.MetricTokens,
		core.MetricReferenceTokens, core.MetricLLMCalls,
		metricUnits, metricUnitsDrafted, metricEdits, metricReads, metricEnvTokens, metricCostUSD, metricQueue, core.MetricTask}
}

// rfcNames returns the documents' names in corpus order: the names of the
// values the env reports as core.MetricTask.
func rfcNames(corpus []RFC) []string {
	names := make([]string, len(corpus))
	for i, r := range corpus {
		names[i] = r.Name
	}
	return names
}

// Spec describes the env.
func (e *Env) Spec() core.EnvSpec { return e.spec }

// Corpus returns the documents the env draws from.
func (e *Env) Corpus() []RFC { return e.corpus }

// Params returns the env's resolved parameters.
func (e *Env) Params() Params { return e.p }

// Team returns the episode's writers' tiers.
func (e *Env) Team() []Tier { return append([]Tier(nil), e.team...) }

// RateLimit returns the episode's shared rate limit.
func (e *Env) RateLimit() ratelimit.Config { return e.limit }

// Close releases nothing; the env holds no resources.
func (e *Env) Close() error { return nil }

// Reset starts an episode: the seed draws the RFC, the house style, the
// team's tiers and its rate limit.
func (e *Env) Reset(seed uint64) ([]core.Observation, error) {
	rng := rand.New(rand.NewPCG(seed, 0x77726974696e67)) // "writing"
	e.rfcIndex = rng.IntN(len(e.corpus))
	e.rfc = &e.corpus[e.rfcIndex]
	e.house = drawStyle(rng)
	e.team = drawTeam(rng, e.pool, e.p.Writers)
	e.limit = e.p.RateLimits[rng.IntN(len(e.p.RateLimits))]
	e.limiter = ratelimit.New(e.limit)
	e.calls = e.calls[:0]
	e.rng = rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	e.started, e.done = true, false
	e.now = 0
	e.usageTokens, e.charged, e.llmCalls, e.edits, e.reads = 0, 0, 0, 0, 0
	e.usd, e.queued = 0, 0
	n := len(e.rfc.Units)
	e.units = make([]unitState, n)
	for k := range e.units {
		e.units[k] = unitState{owner: -1, author: -1, lastWriter: -1, outlineOK: true, repeatOf: -1}
	}
	e.agents = make([]agentState, e.p.Writers)
	for i := range e.agents {
		e.agents[i] = agentState{unit: -1, seen: make([]int, n), seenText: map[int]string{}}
	}
	e.reserve = make([]reservation, e.p.Writers)
	e.meanTokens = float64(e.rfc.Tokens) / float64(n)
	e.guide = guide(e.house)
	e.brief = e.buildBrief()
	e.contextHead = e.buildContextHead()
	e.computeReference()
	return e.observations(), nil
}

// RFC returns the episode's document.
func (e *Env) RFC() *RFC { return e.rfc }

// Now returns the virtual clock in seconds.
func (e *Env) Now() float64 { return e.now }

// admit queues a call issued now that charges tokens against the team's
// rate limit, and returns when it starts.
func (e *Env) admit(tokens int) float64 {
	start := e.limiter.Admit(e.now, tokens)
	e.queued += start - e.now
	e.calls = append(e.calls, call{start: start, tokens: tokens})
	return start
}

// readCost returns what agent i would read with read_peers now: the units
// and their tokens.
func (e *Env) readCost(i int) (units []int, tokens int) {
	for k := range e.units {
		u := &e.units[k]
		if u.status == done && u.lastWriter != i && e.agents[i].seen[k] != u.version {
			units = append(units, k)
			tokens += u.tokens
		}
	}
	return units, tokens
}

// depsToRead returns what agent i would read with read_deps now: the
// drafted units that draft_ready's target depends on and that the agent
// has not read in their current version, and their tokens.
func (e *Env) depsToRead(i int) (units []int, tokens int) {
	k := e.draftTarget(i, decDraftReady)
	if k < 0 {
		return nil, 0
	}
	for _, j := range e.rfc.Units[k].DependsOn {
		u := &e.units[j]
		if u.status == done && e.agents[i].seen[j] != u.version {
			units = append(units, j)
			tokens += u.tokens
		}
	}
	return units, tokens
}

// hasUnread reports whether a peer unit is done in a version agent i has
// not read.
func (e *Env) hasUnread(i int) bool {
	for k := range e.units {
		u := &e.units[k]
		if u.status == done && u.lastWriter != i && e.agents[i].seen[k] != u.version {
			return true
		}
	}
	return false
}

// computeReference sets the single-writer reference: writer 0 alone, under
// the episode's rate limit, reads the style once, then writes every unit
// in template order with the prompt it would have.
func (e *Env) computeReference() {
	key := refKey{rfc: e.rfc.Name, tier: e.team[0].Name, limit: e.limit, guide: tokensOf(e.guide), writers: e.p.Writers}
	if r, ok := e.refs[key]; ok {
		e.refMakespan, e.refTokens = r.makespan, r.tokens
		return
	}
	defer func() {
		if e.refs == nil {
			e.refs = map[refKey]refValue{}
		}
		e.refs[key] = refValue{e.refMakespan, e.refTokens}
	}()
	lim := ratelimit.New(e.limit)
	t0 := e.team[0]
	readTok := tokensOf(e.guide)
	t := lim.Admit(0, readTok) + t0.latency(readTok, 0)
	tok := readTok
	for k, u := range e.rfc.Units {
		var ctx []ctxUnit
		for _, j := range e.contextUnits(k, prevUnits(k, e.p.ContextUnits), func(j int) bool { return j < k }) {
			ctx = append(ctx, ctxUnit{unit: j, who: "you", text: e.rfc.Units[j].Source})
		}
		var older []int
		for j := 0; j < k-e.p.ContextUnits; j++ {
			older = append(older, j)
		}
		req := e.buildRequest(0, decDraftNext, k, true, ctx, older, "")
		pt := promptTokens(req)
		t = lim.Admit(t, pt+u.Tokens) + t0.latency(pt, u.Tokens)
		tok += pt + u.Tokens
	}
	e.refMakespan, e.refTokens = t, tok
}

func prevUnits(k, n int) []int {
	var r []int
	for j := max(0, k-n); j < k; j++ {
		r = append(r, j)
	}
	return r
}

// Step applies the joint action (see the package doc).
func (e *Env) Step(actions []core.Action) (core.StepResult, error) {
	switch {
	case !e.started:
		return core.StepResult{}, errors.New("writing: Step before Reset")
	case e.done:
		return core.StepResult{}, errors.New("writing: Step after the episode ended; call Reset")
	case len(actions) != len(e.agents):
		return core.StepResult{}, fmt.Errorf("writing: Step: want %d actions (one per writer), got %d", len(e.agents), len(actions))
	}
	for i, a := range actions {
		if a.Decision < 0 || a.Decision >= numDecisions {
			return core.StepResult{}, fmt.Errorf("writing: Step: agent %d: decision %d out of range 0..%d", i, a.Decision, numDecisions-1)
		}
		if !e.masks[i][a.Decision] {
			return core.StepResult{}, fmt.Errorf("writing: Step: agent %d (writer_%d): decision %q is not legal now (t=%.1fs)", i, i, decisionSpecs[a.Decision].Name, e.now)
		}
	}
	for i, a := range actions {
		ag := &e.agents[i]
		tier := e.team[i]
		if r := e.reserve[i]; r.ok && r.decision != a.Decision {
			e.reserve[i] = reservation{} // Prompt was called for another decision
		}
		switch a.Decision {
		case decWait:
		case decReadStyle, decReadPeers, decReadDeps:
			tok := tokensOf(e.guide)
			switch a.Decision {
			case decReadPeers, decReadDeps:
				var units []int
				if a.Decision == decReadPeers {
					units, tok = e.readCost(i)
					ag.peerReads++
				} else {
					units, tok = e.depsToRead(i)
				}
				for _, k := range units {
					e.see(i, k)
				}
			default:
				ag.read = true
			}
			e.charged += tok
			e.usd += tier.usd(tok, 0)
			e.reads++
			ag.task, ag.unit = taskRead, -1
			ag.startAt = e.admit(tok)
			ag.busyUntil = ag.startAt + tier.latency(tok, 0)
		case decDraftLongest, decDraftNext, decDraftReady, decEditPeer:
			k := e.target(i, a.Decision)
			e.llmCalls++
			text := cleanText(a.Text)
			pt, ct := a.Usage.PromptTokens, a.Usage.CompletionTokens
			if pt == 0 && ct == 0 {
				// The backend reported no usage (some servers do not):
				// count what the call cost by the env's own measure.
				// Before the unit is marked taken, Prompt rebuilds the
				// request the agent sent.
				pt, ct = promptTokens(e.Prompt(i, a.Decision)), tokensOf(text)
			} else if ct == 0 {
				ct = tokensOf(text)
			}
			e.usageTokens += pt + ct
			e.usd += tier.usd(pt, ct)
			if lat := a.Usage.Latency.Seconds(); a.Usage.Backend != "sim" && lat > 0 {
				ag.startAt, ag.busyUntil = e.now, e.now+lat // a real call: its own time and limits
			} else {
				ag.startAt = e.admit(pt + ct)
				ag.busyUntil = ag.startAt + tier.latency(pt, ct)
			}
			ag.unit, ag.pending = k, text
			switch {
			case k < 0:
				ag.task = taskNoop
			case a.Decision == decEditPeer:
				ag.task = taskEdit
				e.units[k].owner = i
				e.see(i, k) // the editor reads the unit it edits
			default:
				ag.task = taskDraft
				e.units[k].status, e.units[k].owner = drafting, i
			}
		case decSubmit:
			ag.submitted, ag.submitAt = true, e.now
		}
	}
	for i := range e.reserve {
		e.reserve[i] = reservation{}
	}
	e.advance()
	res := core.StepResult{Observations: e.observations()}
	if e.allSubmitted() {
		e.done = true
		res.Terminated = true
		e.finish(&res)
	}
	return res, nil
}

// Truncate ends the episode now; units not finished are left out of the
// document.
func (e *Env) Truncate() (core.StepResult, error) {
	if !e.started {
		return core.StepResult{}, errors.New("writing: Truncate before Reset")
	}
	e.done = true
	res := core.StepResult{Observations: e.observations(), Truncated: true}
	e.finish(&res)
	return res, nil
}

func (e *Env) allSubmitted() bool {
	for i := range e.agents {
		if !e.agents[i].submitted {
			return false
		}
	}
	return true
}

// advance moves the clock to the next moment an agent becomes free and
// completes the work that ends then.
func (e *Env) advance() {
	next := math.Inf(1)
	for i := range e.agents {
		if e.agents[i].task != taskNone {
			next = math.Min(next, e.agents[i].busyUntil)
		}
	}
	if math.IsInf(next, 1) {
		if !e.allSubmitted() {
			e.now += e.p.IdleWait
		}
		return
	}
	e.now = math.Max(e.now, next)
	changed := false
	for i := range e.agents {
		ag := &e.agents[i]
		if ag.task == taskNone || ag.busyUntil > e.now {
			continue
		}
		switch ag.task {
		case taskDraft:
			u := &e.units[ag.unit]
			u.status, u.owner = done, -1
			u.author, u.lastWriter = i, i
			e.setText(ag.unit, ag.pending)
			ag.drafted++
			e.see(i, ag.unit)
			changed = true
		case taskEdit:
			u := &e.units[ag.unit]
			u.owner, u.lastWriter = -1, i
			u.edits++
			e.edits++
			e.setText(ag.unit, ag.pending)
			e.see(i, ag.unit)
			changed = true
		}
		ag.task, ag.unit, ag.pending = taskNone, -1, ""
	}
	if changed {
		e.refreshDefects()
	}
}

func (e *Env) setText(k int, text string) {
	u := &e.units[k]
	u.text = text
	u.tokens = tokensOf(text)
	u.prose = proseOf(text)
	u.forms = e.termForms(k, u.prose)
	u.version++
	u.dev = deviations(text, e.house)
	u.outlineOK = outlineOK(text, e.rfc.Units[k].Headings)
	u.repeatOf = e.restates(k, text)
}

// see records that agent i has read (or written) unit k's current version.
func (e *Env) see(i, k int) {
	ag := &e.agents[i]
	u := &e.units[k]
	ag.seen[k] = u.version
	ag.seenText[k] = u.text
	for j, r := range ag.recent {
		if r == k {
			ag.recent = append(ag.recent[:j], ag.recent[j+1:]...)
			break
		}
	}
	ag.recent = append(ag.recent, k)
}

// cleanText makes an LLM's reply safe to use as a unit: valid UTF-8, at
// most 256 KiB, without a fence wrapped around the whole reply.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	const maxBytes = 256 << 10
	if len(s) > maxBytes {
		cut := maxBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	s = strings.TrimSpace(s)
	lines := strings.Split(s, "\n")
	if len(lines) >= 2 {
		first := strings.TrimSpace(lines[0])
		last := strings.TrimSpace(lines[len(lines)-1])
		info := strings.ToLower(strings.TrimLeft(first, "`~"))
		if (strings.HasPrefix(first, "```") || strings.HasPrefix(first, "~~~")) && (info == "" || info == "markdown" || info == "md") &&
			last == first[:3] {
			s = strings.TrimSpace(strings.Join(lines[1:len(lines)-1], "\n"))
		}
	}
	return s
}

// Document returns the document as it stands: the finished units' texts in
// template order.
func (e *Env) Document() string {
	var parts []string
	for k := range e.units {
		u := &e.units[k]
		if u.version > 0 && strings.TrimSpace(u.text) != "" {
			parts = append(parts, strings.TrimSpace(u.text))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return strings.Join(parts, "\n\n") + "\n"
}

// finish reports the episode's metrics and its document; judging the
// document is for the reward functions.
func (e *Env) finish(res *core.StepResult) {
	doc := e.Document()
	makespan := e.now
	if e.allSubmitted() {
		makespan = 0
		for i := range e.agents {
			makespan = math.Max(makespan, e.agents[i].submitAt)
		}
	}
	drafted := 0
	for k := range e.units {
		if e.units[k].version > 0 {
			drafted++
		}
	}
	m := map[string]float64{
		core.MetricMakespan:          makespan,
		core.MetricReferenceMakespan: e.refMakespan,
		core.MetricTokens:            float64(e.usageTokens + e.charged),
		core.MetricReferenceTokens:   float64(e.refTokens),
		core.MetricLLMCalls:          float64(e.llmCalls),
		metricUnits:                  float64(len(e.units)),
		metricUnitsDrafted:           float64(drafted),
		metricEdits:                  float64(e.edits),
		metricReads:                  float64(e.reads),
		metricEnvTokens:              float64(e.charged),
		metricCostUSD:                e.usd,
		metricQueue:                  e.queued,
		core.MetricTask:              float64(e.rfcIndex), // the RFC's position in the corpus
	}
	res.Metrics = m
	res.Artifacts = map[string][]byte{core.ArtifactDocument: []byte(doc)}
}

// depsDrafted reports whether every unit k depends on is drafted.
func (e *Env) depsDrafted(k int) bool {
	for _, j := range e.rfc.Units[k].DependsOn {
		if e.units[j].version == 0 {
			return false
		}
	}
	return true
}

// legal returns agent i's mask.
func (e *Env) legal(i int) []bool {
	m := make([]bool, numDecisions)
	m[decWait] = true
	ag := &e.agents[i]
	if e.done || ag.submitted || ag.task != taskNone {
		return m
	}
	anyUnclaimed := false
	for k := range e.units {
		if e.units[k].status == unclaimed {
			anyUnclaimed = true
			break
		}
	}
	m[decReadStyle] = !ag.read
	m[decReadPeers] = e.hasUnread(i)
	if anyUnclaimed {
		units, _ := e.depsToRead(i)
		m[decReadDeps] = len(units) > 0
	}
	m[decDraftLongest], m[decDraftNext] = anyUnclaimed, anyUnclaimed
	m[decDraftReady] = anyUnclaimed && e.draftTarget(i, decDraftReady) >= 0
	m[decEditPeer] = ag.read && e.editTarget(i, -1) >= 0
	m[decSubmit] = !anyUnclaimed
	return m
}

// draftTarget returns the unclaimed unit a draft decision takes (not
// reserved by another agent), or -1.
func (e *Env) draftTarget(i, decision int) int {
	best := -1
	for k := range e.units {
		if e.units[k].status != unclaimed || e.reservedByOther(i, k) {
			continue
		}
		if decision == decDraftNext {
			return k
		}
		if decision == decDraftReady && !e.depsDrafted(k) {
			continue
		}
		if best < 0 || e.rfc.Units[k].Tokens > e.rfc.Units[best].Tokens {
			best = k
		}
	}
	return best
}

// editTarget returns the unit edit_peer takes for agent i: a peer unit it
// knows to be defective (the longest), else a never-edited peer unit it
// has not read (template order); never one being edited or reserved. skip
// is a unit to ignore (-1 none).
func (e *Env) editTarget(i, skip int) int {
	ag := &e.agents[i]
	best, review := -1, -1
	for k := range e.units {
		u := &e.units[k]
		if k == skip || !e.editable(i, k) || e.reservedByOther(i, k) {
			continue
		}
		if ag.seen[k] == u.version {
			if u.defective() && (best < 0 || e.rfc.Units[k].Tokens > e.rfc.Units[best].Tokens) {
				best = k
			}
		} else if u.edits == 0 && review < 0 {
			review = k
		}
	}
	if best >= 0 {
		return best
	}
	return review
}

// editable reports whether agent i may edit unit k (ignoring
// reservations): drafted, not being edited, last written by someone else,
// and edited fewer than max_edits_per_unit times.
func (e *Env) editable(i, k int) bool {
	u := &e.units[k]
	return u.status == done && u.owner < 0 && u.lastWriter != i && u.edits < e.p.MaxEditsPerUnit
}

func (e *Env) reservedByOther(i, k int) bool {
	for j, r := range e.reserve {
		if j != i && r.ok && r.unit == k {
			return true
		}
	}
	return false
}

// target returns (and reserves) the unit agent i's text decision works on,
// honouring a reservation Prompt made; -1 when none is left.
func (e *Env) target(i, decision int) int {
	r := e.reserve[i]
	if r.ok && r.decision == decision {
		if r.unit < 0 || e.stillAvailable(i, decision, r.unit) {
			return r.unit
		}
	}
	k := -1
	if decision == decEditPeer {
		k = e.editTarget(i, -1)
	} else {
		k = e.draftTarget(i, decision)
	}
	e.reserve[i] = reservation{decision: decision, unit: k, ok: true}
	return k
}

func (e *Env) stillAvailable(i, decision, k int) bool {
	if decision == decEditPeer {
		return e.editable(i, k)
	}
	return e.units[k].status == unclaimed
}
