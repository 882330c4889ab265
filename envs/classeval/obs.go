package classeval

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/troupe-dev/troupe/core"
)

// observe builds every agent's observation and records the masks.
func (e *Env) observe() []core.Observation {
	obs := make([]core.Observation, len(e.agents))
	e.masks = make([][]bool, len(e.agents))
	for i := range e.agents {
		obs[i] = core.Observation{Features: e.features(i), Text: e.text(i), Mask: e.mask(i)}
		e.masks[i] = obs[i].Mask
	}
	return obs
}

// mask returns agent i's legal decisions: only wait while it is busy or
// has submitted; otherwise wait, submit, and each decision that has a
// target.
func (e *Env) mask(i int) []bool {
	m := make([]bool, numDecisions)
	m[decWait] = true
	if !e.free(i) || e.final != nil {
		return m
	}
	m[decSubmit] = true
	if j := e.nextUnclaimed(); j >= 0 && e.recordingFor(i, j, "m_dire") != nil {
		m[decImplement] = true
	}
	m[decImplementReady] = e.nextReady(i) >= 0
	m[decWriteClass] = e.classSample(i) != ""
	m[decRunExamples] = e.testable(i) >= 0
	m[decRepair] = e.repairable(i) >= 0
	m[decTakeOver] = e.takeable(i) >= 0
	return m
}

func b2f(v bool) float64 {
	if v {
		return 1
	}
	return 0
}

func clip01(v float64) float64 { return math.Max(0, math.Min(1, v)) }

// features returns agent i's features (see the feat* constants).
func (e *Env) features(i int) []float64 {
	f := make([]float64, obsSize)
	a := e.agents[i]
	M, N := float64(len(e.methods)), float64(len(e.agents))
	f[featFree] = b2f(e.free(i))
	f[featSubmitted] = b2f(a.submitted)
	f[featStrength] = clip01(a.strength)
	best, sum, cheapest, maxPrice, maxSpeed, bestClass := 0.0, 0.0, math.Inf(1), 0.0, 0.0, 0.0
	for _, b := range e.agents {
		best = math.Max(best, b.strength)
		bestClass = math.Max(bestClass, b.classStrength)
		sum += b.strength
		cheapest = math.Min(cheapest, b.model.OutputUSDPerMTok)
		maxPrice = math.Max(maxPrice, b.model.OutputUSDPerMTok)
		maxSpeed = math.Max(maxSpeed, b.model.DecodeTPS)
	}
	f[featStrongest] = b2f(e.strongest() == i)
	f[featCheapest] = b2f(a.model.OutputUSDPerMTok <= cheapest)
	f[featPrice] = a.model.OutputUSDPerMTok / maxPrice
	f[featSpeed] = a.model.DecodeTPS / maxSpeed
	f[featHasIter] = b2f(e.be.HasMode(a.model.Name, "m_iter"))
	f[featTeamBest] = clip01(best)
	f[featTeamMean] = clip01(sum / N)
	var unclaimed, ready, owned, ownPass, written, passing, failing, takeable float64
	for j, m := range e.methods {
		if m.owner < 0 {
			unclaimed++
			if e.depsWritten(j) {
				ready++
			}
		}
		if m.owner == i {
			owned++
			if m.hasCode && m.tested == m.version && m.pass {
				ownPass++
			}
		}
		if m.hasCode {
			written++
			if m.tested == m.version && m.pass {
				passing++
			}
		}
		if failed(m) {
			failing++
		}
	}
	f[featUnclaimed] = unclaimed / M
	f[featReady] = ready / M
	f[featAnyReady] = b2f(ready > 0)
	if j := e.nextUnclaimed(); j >= 0 {
		f[featNextBlocked] = b2f(!e.depsWritten(j))
	}
	if j := e.testable(i); j >= 0 {
		f[featCanTest] = 1
		f[featTestHasEx] = b2f(e.methods[j].info.Examples > 0)
	}
	if j := e.repairable(i); j >= 0 {
		f[featCanRepair] = 1
		f[featRepairLeft] = clip01(float64(e.recordingsLeft(i, j)) / 8)
	}
	for j, m := range e.methods {
		if m.owner >= 0 && m.owner != i && failed(m) && e.nextRecording(i, j) != nil {
			takeable++
			if m.writer >= 0 && e.agents[m.writer].strength < a.strength {
				f[featTakeWeaker] = 1
			}
		}
	}
	f[featOwned] = owned / M
	f[featOwnPassing] = ownPass / M
	f[featTeamWritten] = written / M
	f[featTeamPassing] = passing / M
	f[featTeamFailing] = failing / M
	f[featTakeable] = takeable / M
	busy, done := 0.0, 0.0
	for k, b := range e.agents {
		if b.submitted {
			done++
		} else if !e.free(k) {
			busy++
		}
	}
	f[featBusy] = busy / N
	f[featDone] = done / N
	f[featTime] = clip01(e.now / math.Max(e.refTime, 1e-9) / 2)
	f[featTokens] = clip01(float64(e.tokens) / math.Max(float64(e.refTokens), 1) / 4)
	f[featDollars] = clip01(e.dollars / math.Max(e.refUSD, 1e-12) / 4)
	f[featQueue] = clip01(e.lastQueue / 30)
	f[featClassSize] = clip01(M / 10)
	if best > 0 {
		f[featRelStrength] = clip01(a.strength / best)
	}
	if j := e.nextUnclaimed(); j >= 0 {
		f[featNextExamples] = b2f(e.methods[j].info.Examples > 0)
		f[featNextDeps] = b2f(slices.ContainsFunc(e.methods[j].info.Deps, func(d int) bool { return d != j }))
	}
	f[featClassStrength] = clip01(a.classStrength)
	f[featBestClassWriter] = b2f(e.bestClassWriter() == i)
	f[featTeamBestClass] = clip01(bestClass)
	f[featCanWriteClass] = b2f(e.classSample(i) != "")
	j := e.repairable(i)
	if j < 0 {
		j = e.takeable(i)
	}
	if j >= 0 {
		m := e.methods[j]
		if n := float64(m.kinds[0] + m.kinds[1] + m.kinds[2] + m.kinds[3]); n > 0 {
			f[featFailMismatch] = float64(m.kinds[0]) / n
			f[featFailCosmetic] = float64(m.kinds[1]) / n
			f[featFailCode] = float64(m.kinds[2]) / n
			f[featFailExample] = float64(m.kinds[3]) / n
		}
		f[featFailedVersions] = clip01(float64(m.failedVersions) / 3)
		f[featFailBroken] = b2f(m.broken)
	}
	untestedN, brokenN := 0.0, 0.0
	for _, m := range e.methods {
		if untested(m) {
			untestedN++
		}
		if m.hasCode && !m.writing && m.broken {
			brokenN++
		}
	}
	f[featTeamUntested] = untestedN / M
	f[featTeamBroken] = brokenN / M
	return f
}

// text is agent i's context: what it was told, did and read.
func (e *Env) text(i int) string { return strings.Join(e.agents[i].notes, "\n\n") }

// State is the global state for centralized training: every agent's
// features, in agent order.
func (e *Env) State() []float64 {
	s := make([]float64, 0, e.spec.StateSize)
	if !e.started {
		return make([]float64, e.spec.StateSize)
	}
	for i := range e.agents {
		s = append(s, e.features(i)...)
	}
	return s
}

// methodResult is the per-method summary in the "results.json" artifact.
type methodResult struct {
	// Method is the method's name; Owner the agent that holds it (−1 if
	// nobody claimed it); Source the recording behind its final code
	// ("MODEL/SOURCE", empty if it was never written).
	Method string `json:"method"`
	Owner  int    `json:"owner"`
	Source string `json:"source"`
	// Versions counts the codes it had.
	Versions int `json:"versions"`
	// Reply is what extraction found in its final reply ("extracted",
	// "truncated", "stub", "missing"; suite.ExtractStatus), "" if it was
	// never written.
	Reply string `json:"reply"`
	// ExamplesPass reports that its visible examples passed on its final
	// code; Examples is how many it has.
	ExamplesPass bool `json:"examples_pass"`
	Examples     int  `json:"examples"`
	// HiddenPass reports that its TestCase passed; HiddenResult is the
	// sandbox's account.
	HiddenPass   bool   `json:"hidden_pass"`
	HiddenResult string `json:"hidden_result"`
}

// episodeResult is the "results.json" artifact.
type episodeResult struct {
	// Backend is always "replay": the code is recorded completions.
	Backend   string         `json:"backend"`
	TaskID    string         `json:"task_id"`
	Team      []string       `json:"team"`
	ClassPass bool           `json:"class_pass"`
	Methods   []methodResult `json:"methods"`
}

// finish runs the hidden unittest suite on the assembled class and builds
// the final result.
func (e *Env) finish(truncated bool) (core.StepResult, error) {
	score, err := e.be.Score(e.task, e.recs())
	if err != nil {
		return core.StepResult{}, fmt.Errorf("env classeval: %s: hidden tests: %w", e.cls.ID, err)
	}
	if len(score.MethodPass) != len(e.methods) {
		return core.StepResult{}, fmt.Errorf("env classeval: %s: the suite scored %d methods, the class has %d", e.cls.ID, len(score.MethodPass), len(e.methods))
	}
	res := episodeResult{Backend: Backend, TaskID: e.cls.ID, ClassPass: score.ClassPass}
	for _, a := range e.agents {
		res.Team = append(res.Team, a.model.Name)
	}
	passed, examplesPass, broken := 0, 0, 0
	for j, m := range e.methods {
		r := methodResult{Method: m.info.Name, Owner: m.owner, Source: m.source, Versions: m.version,
			ExamplesPass: m.hasCode && m.tested == m.version && m.pass, Examples: m.info.Examples,
			HiddenPass: score.MethodPass[j]}
		if m.hasCode {
			r.Reply = string(m.rec.status)
		}
		if !m.hasCode || m.broken {
			broken++
		}
		if j < len(score.Detail) {
			r.HiddenResult = score.Detail[j]
		}
		if r.HiddenPass {
			passed++
		}
		if r.ExamplesPass {
			examplesPass++
		}
		res.Methods = append(res.Methods, r)
	}
	M := float64(len(e.methods))
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return core.StepResult{}, fmt.Errorf("env classeval: results: %w", err)
	}
	var sol strings.Builder
	fmt.Fprintf(&sol, "# %s (%s), team %s; replayed completions (backend %q)\n", e.cls.Name, e.cls.ID, e.teamMakeUp(), Backend)
	for _, m := range e.methods {
		fmt.Fprintf(&sol, "\n# --- %s (%s)\n", m.info.Name, m.source)
		if m.hasCode {
			sol.WriteString(m.rec.Code + "\n")
		} else {
			sol.WriteString("# not written\n")
		}
	}
	sr := core.StepResult{
		Observations: e.observe(),
		Terminated:   !truncated,
		Truncated:    truncated,
		Metrics: map[string]float64{
			core.MetricPassRate:          float64(passed) / M,
			MetricClassPass:              b2f(score.ClassPass),
			core.MetricMakespan:          e.now,
			core.MetricReferenceMakespan: e.refTime,
			core.MetricTokens:            float64(e.tokens),
			core.MetricReferenceTokens:   float64(e.refTokens),
			MetricDollars:                e.dollars,
			MetricReferenceDollars:       e.refUSD,
			MetricReplayedCalls:          float64(e.calls),
			MetricExampleRuns:            float64(e.runs),
			MetricQueueS:                 e.queueS,
			MetricUnextracted:            float64(e.unextract),
			MetricExamplesPassRate:       float64(examplesPass) / M,
			MetricMethods:                M,
			MetricTakeOvers:              float64(e.takeOvers),
			MetricRewrites:               float64(e.rewrites),
			MetricBrokenShare:            float64(broken) / M,
			core.MetricTask:              float64(e.task), // the class's position in the dataset
		},
		Artifacts: map[string][]byte{
			"methods.py":   []byte(sol.String()),
			"results.json": js,
		},
	}
	e.final = &sr
	return sr, nil
}
