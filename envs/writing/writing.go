// Package writing is the collaborative-writing task, registered as the
// built-in env "writing": a team of writer agents writes a Rust RFC (the
// nine-section RFC template) unit by unit. The env reports the final
// document as the artifact "document.md" and does not judge it: its
// quality is for the reward functions to score, normally
// "writing.consistency" (package rewards), which scores its structural and
// stylistic consistency.
//
// # Task
//
// An episode is one RFC of the corpus (drawn by the seed): the 40
// full-template RFCs shipped in corpus/ (rust-lang/rfcs, MIT OR
// Apache-2.0), or any directory of RFC-style Markdown given as the corpus_dir param. The
// document is cut into work units from the real text: every H2 template
// section's lead text, and every H3 subsection (with what lies below it);
// an H2 with no lead text is merged with its first subsection, and unit 0
// also carries the H1 title and the RFC's metadata list. The units'
// lengths are those of the real text, so a document has a median of 13
// units and its longest unit is a median 19 % of it: with five writers and
// longest-first scheduling the speedup cap over one writer is 4.57× on the
// shipped corpus (3.80× with four, 5.11× with six; ratio of mean makespans,
// 0.8 s per call, 40 tokens/s). The final document is the units' current
// texts joined in template order.
//
// # Agents and decisions
//
// Writers default to five, because the cap with four (3.8×) leaves little
// room above the 3× target once reading and harmonizing cost time, while
// five leave room (4.6×) and six add little (5.1×) for more coordination.
// Each writer sees only its own context: the brief (title, metadata,
// the real Summary as the task statement), the outline (every unit's
// heading and length) and the shared task board (which unit is unclaimed,
// being written or done, and by whom), plus what it has read and written
// itself. Decisions:
//
//	wait           do nothing until the next event
//	read_style     read the house style guide (and outline conventions) and
//	               every peer's unit not read in its current version;
//	               the env charges the tokens and base + tokens/prefill_tps
//	               seconds
//	draft_longest  claim the longest unclaimed unit and write it (LLM)
//	draft_next     claim the first unclaimed unit in template order (LLM)
//	edit_peer      rewrite a peer's unit in the house style (LLM; needs
//	               read_style): a unit this writer knows to deviate
//	               (longest first), else a never-edited peer unit it has not
//	               read, in template order; a unit is edited at most
//	               max_edits_per_unit times (default 2)
//	submit         declare itself done (legal once no unit is unclaimed)
//
// A writer knows a unit deviates once it has read its current version
// (read_style, or editing it) and the unit departs from the house style:
// restyling it to the house style (restyle.Markdown) would change it,
// or its H1–H3 headings are not the ones the outline prescribes.
//
// Masks: a busy or submitted agent has only wait; read_style needs
// something new to read; draft_* need an unclaimed unit; edit_peer needs
// read_style and a target; submit needs every unit claimed. When several
// agents pick targets in one step they are served in agent order (the
// runtime calls Prompt in agent order, and Prompt reserves the target); an
// agent left without a target spends its LLM call on nothing.
//
// # Clock
//
// The env owns virtual time and is event-driven (list scheduling): a text
// decision keeps its agent busy for Action.Usage.Latency (when that is
// zero, for the env's own model ref_base_latency_s + prompt/ref_prefill_tps
// + completion/ref_decode_tps), read_style for its charged latency; each
// Step then advances the clock to the next moment an agent becomes free
// (or by idle_wait_s when nobody is busy), and the unit a writer finished
// becomes visible then. makespan_s is the time of the last submit.
// reference_makespan_s is what one writer alone takes with the same
// latency model: one read_style, then every unit in template order with
// the prompt it would have; it is the normaliser of the speed reward
// (speed = 1 − makespan_s / reference_makespan_s), and reference_tokens
// its tokens.
//
// # Simulated writers
//
// With the sim backend, [Env.Simulate] writes a unit from the real RFC text
// of that unit, rendered in the writer's habits: heading syntax (ATX or
// setext), heading case, bullet marker, emphasis and strong markers, code
// fence, US or UK spelling, and "we" or "I", drawn per writer per episode
// from the seed (as is the house style). A writer that has read the house
// style follows it on each habit with probability style_follow_prob
// (default 0.99) per unit and slips back to its own habit otherwise. A
// writer that has not read the outline conventions (read_style) makes a
// structure slip (a template section renamed, or the unit's heading one
// level too deep) with probability structure_slip_prob (default 0.05) per
// unit; one that has read them with styled_structure_slip_prob (default
// 0). edit_peer re-renders the unit from its source in the house style,
// with the same probabilities. With a real LLM the text is whatever the
// model wrote, taken as is.
//
// # Observations, state and metrics
//
// A writer's 20 features, scaled to O(1), are in order: a bias (1);
// whether it is busy, has submitted and has read the house style; the
// clock ÷ reference_makespan_s; the fractions of units unclaimed, in
// progress (being drafted or edited) and drafted; the longest unclaimed
// unit and the first unclaimed unit in template order (each ÷ mean unit
// ÷ 4, at most 2); the unclaimed tokens ÷ all tokens; the peer units it
// knows to deviate from the house style (÷ 4, at most 1); the peer units
// done whose current version it has not read (÷ units); the fractions of
// the other writers that are busy and that have submitted; the units it
// drafted (÷ units); whether a never-edited peer unit is unread by it; the
// team size ÷ 8; the unit edit_peer would take (÷ mean unit ÷ 4, at most
// 2; 0 if none); and the estimated time until the last busy peer is free
// (÷ mean unit time ÷ 4, at most 1).
//
// State holds the clock, every agent's status and every unit's status,
// size and deviation from the house style per habit. Episode metrics:
// makespan_s, reference_makespan_s, tokens (LLM usage as the backend
// reports it, or the env's count of the prompt and the text when it reports
// none, plus what the env charged for reading), reference_tokens,
// llm_calls, units, units_drafted, edits, reads and env_tokens; the
// document is the artifact "document.md" (core.ArtifactDocument). The env reports no quality
// metric: the "writing.consistency" reward adds "consistency" (its score),
// "consistency.coverage" and one "consistency.<check>" per check to the
// episode's metrics.
//
// # Calibration
//
// TestCalibration (go test -run TestCalibration -v) plays 100 seeds with
// the default params and the runtime's default sim latency model
// (0.8 s + prompt/2000 + completion/40), consistency being the
// "writing.consistency" reward's score of the document and speedup the
// mean makespan of single_agent over the policy's:
//
//	policy          consistency  makespan  speedup
//	single_agent    0.995        122.4 s   1.00
//	parallel_naive  0.700         25.5 s   4.81
//	sop             0.993         61.6 s   1.99
//	decentralized   0.999         32.3 s   3.79
//
// where "decentralized" is a policy on each agent's own features: read the
// style once, draft the longest unclaimed unit, re-read when peers finished
// units, harmonize units known to deviate, wait while work is in progress,
// then submit.
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
	decDraftLongest
	decDraftNext
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
	featKnownDeviating        // peer units known to deviate from the house style, ÷ 4 (≤ 1)
	featUnreadPeer            // peer units done whose current version the agent has not read / units
	featPeersBusy             // fraction of the other agents that are busy
	featPeersSubmitted        // fraction of the other agents that have submitted
	featOwnDrafts             // units this agent drafted / units
	featReviewable            // 1 if a never-edited peer unit is unread by this agent
	featTeamSize              // writers / 8
	featEditSize              // the unit edit_peer would take / mean unit, ÷ 4 (≤ 2); 0 if none
	featPeersRemaining        // estimated time until the last busy peer is free / mean unit time, ÷ 4 (≤ 1)
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
)

// Baseline names offered through [Env.Baseline].
const (
	BaselineSingleAgent   = "single_agent"
	BaselineParallelNaive = "parallel_naive"
	BaselineSOP           = "sop"
)

// Params are the env's parameters (env.params); the defaults are those of
// [DefaultParams].
type Params struct {
	// CorpusDir is a directory of RFC-style Markdown files to use instead
	// of the shipped corpus ("" = shipped).
	CorpusDir string `json:"corpus_dir"`
	// RFCs restricts the corpus to these files (names with or without
	// ".md"; empty = every RFC of the corpus). One name fixes the document;
	// a list such as the held-out RFCs lets corpus_dir point at a folder
	// that also holds other files. Each episode draws one from the seed.
	RFCs []string `json:"rfcs"`
	// Writers is the team size (default 5, 1..16).
	Writers int `json:"writers"`
	// StyleFollowProb is the chance, per habit and unit, that a writer who
	// read the house style follows it (default 0.99).
	StyleFollowProb float64 `json:"style_follow_prob"`
	// StructureSlipProb is the chance per unit of a structure slip by a
	// writer who has not read the outline conventions (default 0.05).
	StructureSlipProb float64 `json:"structure_slip_prob"`
	// StyledStructureSlipProb is the same for a writer who has (default 0).
	StyledStructureSlipProb float64 `json:"styled_structure_slip_prob"`
	// RefBaseLatency, RefPrefillTPS and RefDecodeTPS are the latency model
	// (seconds per call, prompt tokens/s, completion tokens/s) the env
	// uses for the reference makespan, for what read_style costs, and for
	// text decisions whose Usage has no latency. Keep them equal to the
	// runtime's sim latency model (defaults 0.8, 2000, 40).
	RefBaseLatency float64 `json:"ref_base_latency_s"`
	RefPrefillTPS  float64 `json:"ref_prefill_tps"`
	RefDecodeTPS   float64 `json:"ref_decode_tps"`
	// IdleWait is how far the clock moves when every agent waits and
	// nobody is busy (default 1 s).
	IdleWait float64 `json:"idle_wait_s"`
	// MaxEditsPerUnit caps how often one unit may be edited (default 2),
	// so that two writers cannot pass a unit back and forth forever.
	MaxEditsPerUnit int `json:"max_edits_per_unit"`
	// ContextUnits is how many of the units an agent read or wrote most
	// recently its prompts quote in full (default 2); older ones are
	// listed by heading.
	ContextUnits int `json:"context_units"`
	// MaxSteps bounds an episode (default 1000).
	MaxSteps int `json:"max_steps"`
}

// DefaultParams returns the parameter defaults.
func DefaultParams() Params {
	return Params{
		Writers:                 5,
		StyleFollowProb:         0.99,
		StructureSlipProb:       0.05,
		StyledStructureSlipProb: 0,
		RefBaseLatency:          0.8,
		RefPrefillTPS:           2000,
		RefDecodeTPS:            40,
		IdleWait:                1,
		MaxEditsPerUnit:         2,
		ContextUnits:            2,
		MaxSteps:                1000,
	}
}

func (p Params) validate() error {
	prob := func(key string, v float64) error {
		if !(v >= 0 && v <= 1) {
			return fmt.Errorf("params: key %q: want a probability in [0, 1], got %v", key, v)
		}
		return nil
	}
	pos := func(key string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("params: key %q: want a positive number, got %v", key, v)
		}
		return nil
	}
	switch {
	case p.Writers < 1 || p.Writers > 16:
		return fmt.Errorf("params: key \"writers\": want 1..16, got %d", p.Writers)
	case p.ContextUnits < 0 || p.ContextUnits > 64:
		return fmt.Errorf("params: key \"context_units\": want 0..64, got %d", p.ContextUnits)
	case p.MaxEditsPerUnit < 0:
		return fmt.Errorf("params: key \"max_edits_per_unit\": want ≥ 0, got %d", p.MaxEditsPerUnit)
	case p.MaxSteps < 1:
		return fmt.Errorf("params: key \"max_steps\": want ≥ 1, got %d", p.MaxSteps)
	case p.RefBaseLatency < 0 || math.IsNaN(p.RefBaseLatency) || math.IsInf(p.RefBaseLatency, 0):
		return fmt.Errorf("params: key \"ref_base_latency_s\": want ≥ 0, got %v", p.RefBaseLatency)
	}
	for _, e := range []error{
		prob("style_follow_prob", p.StyleFollowProb),
		prob("structure_slip_prob", p.StructureSlipProb),
		prob("styled_structure_slip_prob", p.StyledStructureSlipProb),
		pos("ref_prefill_tps", p.RefPrefillTPS),
		pos("ref_decode_tps", p.RefDecodeTPS),
		pos("idle_wait_s", p.IdleWait),
	} {
		if e != nil {
			return e
		}
	}
	return nil
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
	dev        uint16 // habit deviations from the house style (bit per habit)
	outlineOK  bool
}

func (u *unitState) deviates() bool { return u.dev != 0 || !u.outlineOK }

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
	startAt   float64 // when the current task started
	busyUntil float64
	pending   string
	read      bool
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

// Env is one instance of the writing task. It is not safe for concurrent
// use.
type Env struct {
	p        Params
	corpus   []RFC
	spec     core.EnvSpec
	maxUnits int

	started, done bool
	rfc           *RFC
	house         restyle.Style
	habits        []restyle.Style
	now           float64
	units         []unitState
	agents        []agentState
	reserve       []reservation
	masks         [][]bool   // the masks of the last observations, which actions must respect
	rng           *rand.Rand // for Simulate when the runtime passes none
	usageTokens   int
	charged       int
	llmCalls      int
	edits, reads  int
	meanTokens    float64
	refMakespan   float64
	refTokens     int
	guide         string
	brief         string
}

var decisionSpecs = []core.DecisionSpec{
	{Name: "wait"},
	{Name: "read_style"},
	{Name: "draft_longest", NeedsText: true},
	{Name: "draft_next", NeedsText: true},
	{Name: "edit_peer", NeedsText: true},
	{Name: "submit"},
}

// New returns a writing env configured by params (see [Params]).
func New(params map[string]any) (*Env, error) {
	p := DefaultParams()
	if err := core.DecodeParams(params, &p); err != nil {
		return nil, fmt.Errorf("writing: %w", err)
	}
	if err := p.validate(); err != nil {
		return nil, fmt.Errorf("writing: %w", err)
	}
	var corpus []RFC
	var err error
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
	e := &Env{p: p, corpus: corpus}
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
		Baselines: []string{BaselineSingleAgent, BaselineParallelNaive, BaselineSOP},
		// The reference metrics estimate one writer's time and tokens.
		ReferenceBaseline: BaselineSingleAgent,
		Capabilities:      core.CapTruncate | core.CapPrompt | core.CapSimulate | core.CapBaseline,
		MaxSteps:          p.MaxSteps,
	}
	return e, nil
}

func metricNames() []string {
	return []string{core.MetricMakespan, core.MetricReferenceMakespan, core.MetricTokens,
		core.MetricReferenceTokens, core.MetricLLMCalls,
		metricUnits, metricUnitsDrafted, metricEdits, metricReads, metricEnvTokens}
}

// Spec describes the env.
func (e *Env) Spec() core.EnvSpec { return e.spec }

// Corpus returns the documents the env draws from.
func (e *Env) Corpus() []RFC { return e.corpus }

// Params returns the env's resolved parameters.
func (e *Env) Params() Params { return e.p }

// Close releases nothing; the env holds no resources.
func (e *Env) Close() error { return nil }

// Reset starts an episode: the seed draws the RFC, the house style and
// every writer's habits.
func (e *Env) Reset(seed uint64) ([]core.Observation, error) {
	rng := rand.New(rand.NewPCG(seed, 0x77726974696e67)) // "writing"
	e.rfc = &e.corpus[rng.IntN(len(e.corpus))]
	e.house = drawStyle(rng)
	e.habits = make([]restyle.Style, e.p.Writers)
	for i := range e.habits {
		e.habits[i] = drawStyle(rng)
	}
	e.rng = rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	e.started, e.done = true, false
	e.now = 0
	e.usageTokens, e.charged, e.llmCalls, e.edits, e.reads = 0, 0, 0, 0, 0
	n := len(e.rfc.Units)
	e.units = make([]unitState, n)
	for k := range e.units {
		e.units[k] = unitState{owner: -1, author: -1, lastWriter: -1, outlineOK: true}
	}
	e.agents = make([]agentState, e.p.Writers)
	for i := range e.agents {
		e.agents[i] = agentState{unit: -1, seen: make([]int, n), seenText: map[int]string{}}
	}
	e.reserve = make([]reservation, e.p.Writers)
	e.meanTokens = float64(e.rfc.Tokens) / float64(n)
	e.guide = guide(e.house)
	e.brief = e.buildBrief()
	e.computeReference()
	return e.observations(), nil
}

// RFC returns the episode's document.
func (e *Env) RFC() *RFC { return e.rfc }

// Now returns the virtual clock in seconds.
func (e *Env) Now() float64 { return e.now }

// latency is the env's latency model.
func (e *Env) latency(prompt, completion int) float64 {
	return e.p.RefBaseLatency + float64(prompt)/e.p.RefPrefillTPS + float64(completion)/e.p.RefDecodeTPS
}

// readCost returns what agent i would read now: the units and the tokens.
func (e *Env) readCost(i int) (units []int, tokens int) {
	tokens = tokensOf(e.guide)
	for k := range e.units {
		u := &e.units[k]
		if u.status == done && u.lastWriter != i && e.agents[i].seen[k] != u.version {
			units = append(units, k)
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

// computeReference sets the single-writer reference: one read_style, then
// every unit in template order with the prompt it would have.
func (e *Env) computeReference() {
	readTok := tokensOf(e.guide)
	t := e.p.RefBaseLatency + float64(readTok)/e.p.RefPrefillTPS
	tok := readTok
	for k, u := range e.rfc.Units {
		var ctx []ctxUnit
		for j := max(0, k-e.p.ContextUnits); j < k; j++ {
			ctx = append(ctx, ctxUnit{unit: j, who: "you", text: e.rfc.Units[j].Source})
		}
		var older []int
		for j := 0; j < k-e.p.ContextUnits; j++ {
			older = append(older, j)
		}
		req := e.buildRequest(0, decDraftNext, k, true, ctx, older, "")
		pt := promptTokens(req)
		t += e.latency(pt, u.Tokens)
		tok += pt + u.Tokens
	}
	e.refMakespan, e.refTokens = t, tok
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
		if r := e.reserve[i]; r.ok && r.decision != a.Decision {
			e.reserve[i] = reservation{} // Prompt was called for another decision
		}
		switch a.Decision {
		case decWait:
		case decReadStyle:
			units, tok := e.readCost(i)
			for _, k := range units {
				e.see(i, k)
			}
			ag.read = true
			e.charged += tok
			e.reads++
			ag.task, ag.unit = taskRead, -1
			ag.startAt, ag.busyUntil = e.now, e.now+e.latency(tok, 0)
		case decDraftLongest, decDraftNext, decEditPeer:
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
			}
			e.usageTokens += pt + ct
			lat := a.Usage.Latency.Seconds()
			if lat <= 0 {
				if ct == 0 {
					ct = tokensOf(text)
				}
				lat = e.latency(pt, ct)
			}
			ag.startAt, ag.busyUntil = e.now, e.now+lat
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
		case taskEdit:
			u := &e.units[ag.unit]
			u.owner, u.lastWriter = -1, i
			u.edits++
			e.edits++
			e.setText(ag.unit, ag.pending)
			e.see(i, ag.unit)
		}
		ag.task, ag.unit, ag.pending = taskNone, -1, ""
	}
}

func (e *Env) setText(k int, text string) {
	u := &e.units[k]
	u.text = text
	u.tokens = tokensOf(text)
	u.version++
	u.dev = deviations(text, e.house)
	u.outlineOK = outlineOK(text, e.rfc.Units[k].Headings)
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
	}
	res.Metrics = m
	res.Artifacts = map[string][]byte{core.ArtifactDocument: []byte(doc)}
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
	m[decReadStyle] = !ag.read || e.hasUnread(i)
	m[decDraftLongest], m[decDraftNext] = anyUnclaimed, anyUnclaimed
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
		if best < 0 || e.rfc.Units[k].Tokens > e.rfc.Units[best].Tokens {
			best = k
		}
	}
	return best
}

// editTarget returns the unit edit_peer takes for agent i: a peer unit it
// knows to deviate (the longest), else a never-edited peer unit it has not
// read (template order); never one being edited or reserved. skip is a
// unit to ignore (-1 none).
func (e *Env) editTarget(i, skip int) int {
	ag := &e.agents[i]
	best, review := -1, -1
	for k := range e.units {
		u := &e.units[k]
		if k == skip || !e.editable(i, k) || e.reservedByOther(i, k) {
			continue
		}
		if ag.seen[k] == u.version {
			if u.deviates() && (best < 0 || e.rfc.Units[k].Tokens > e.rfc.Units[best].Tokens) {
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
