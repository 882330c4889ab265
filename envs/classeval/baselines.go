package classeval

import (
	"fmt"
	"strings"

	"github.com/troupe-dev/troupe/core"
)

// Baseline names offered through [Env.Baseline]; BaselineSingleAgent is
// the reference baseline (core.EnvSpec.ReferenceBaseline). Besides these,
// the env offers "solo_MODEL" for every model of its pool.
const (
	BaselineSingleAgent   = "single_agent"
	BaselineParallelNaive = "parallel_naive"
	BaselineSOP           = "sop"
	BaselineEscalate      = "test_escalate"
	BaselineDepsFirst     = "deps_first"
	BaselineDepsEscalate  = "deps_escalate"
	BaselineStrongTest    = "strong_test"
	BaselineStrongNaive   = "strong_naive"
	BaselineStrongByTeam  = "strong_by_team"
	BaselineHolistic      = "holistic"
	BaselineHolisticSplit = "holistic_or_split"
	BaselineHolisticFix   = "holistic_fix"
	soloPrefix            = "solo_"
)

// baselineRewrites bounds the rewrites (repairs and take-overs) the
// scripted policies do on one method.
const baselineRewrites = 2

// Baseline returns a scripted joint policy bound to this env (it makes Env a
// core.BaselineProvider). Each rule in one line:
//
//   - single_agent: the team's strongest model alone implements the methods
//     in the class's order (m_dire), runs each one's examples and rewrites
//     it up to 2 times while they fail; the others submit at once.
//   - solo_MODEL: the same with MODEL as the lone coder (MODEL replaces
//     coder0's model for the episode), one row per model of the pool.
//   - parallel_naive: every free coder implements the next unclaimed
//     method (m_dire); nobody runs examples; each submits when none is left.
//   - sop: fixed stages with barriers: everybody implements until all are
//     written; then each runs its methods' examples; then each rewrites its
//     failing methods once; then runs them again; then all submit.
//   - test_escalate: everybody implements (m_dire) and runs its own
//     examples; a failing method goes to the team's strongest model, which
//     rewrites its own failures and takes over the others' (up to 2 rewrites
//     a method); the others never rewrite.
//   - deps_first: a coder implements the first unclaimed method whose
//     dependencies are written, with them in context (m_iter), waits while
//     dependencies are being written, falls back to m_dire otherwise; runs
//     its examples and rewrites its failures up to 2 times.
//   - deps_escalate: deps_first's ordering with test_escalate's escalation.
//   - strong_test: only the capable coders (strength at least
//     capableShare of the team's best) work: each implements the next
//     method (m_dire), runs its examples and rewrites its failures up to 2
//     times; the others submit at once.
//   - strong_naive: only the capable coders work, implementing the next
//     unclaimed method (m_dire) in parallel, without examples or rewrites;
//     the others submit at once.
//   - holistic: the team's best whole-class writer writes the whole class
//     in one call (write_class) and submits; the others submit at once
//     (ClassEval's holistic generation).
//   - holistic_or_split: a class of 3 or more methods as holistic, a
//     smaller one method by method by the coders within 0.6 of the best
//     (strength), in parallel; nobody runs examples. The best single rule
//     of the headroom test on training seeds before a visibly broken reply
//     was a failing method.
//   - holistic_fix: a class of 3 or more methods as holistic, a smaller
//     one method by method by the coders within 0.5 of the best; then
//     every one of those coders rewrites, in parallel, the methods whose
//     reply is visibly broken (cut off, a restated stub, no code), once;
//     nobody runs examples. The best single rule of the headroom test on
//     training seeds.
//   - strong_by_team: the rule chosen by the team's strongest model
//     (byTeamRules): ChatGPT best, the class in one call by the best
//     whole-class writer, then the coders within 0.5 of ChatGPT rewrite
//     the visibly broken methods in parallel; GPT-4 or CodeGeeX best,
//     holistic_fix; instruct-StarCoder or WizardCoder best, the coders
//     within 0.6 of it write dependencies first in context; any other,
//     the coders within 0.6 of the best write in the class's order.
//     Nobody runs examples. It is the per-team choice of the headroom test
//     (headroom_test.go), made on training seeds.
func (e *Env) Baseline(name string) (core.Baseline, error) {
	switch name {
	case BaselineSingleAgent:
		return baselineFunc(func() []int { return e.single(e.strongest()) }), nil
	case BaselineParallelNaive:
		return baselineFunc(e.parallelNaive), nil
	case BaselineSOP:
		return baselineFunc(e.sop), nil
	case BaselineEscalate:
		return baselineFunc(func() []int { return e.team(false, true) }), nil
	case BaselineDepsFirst:
		return baselineFunc(func() []int { return e.team(true, false) }), nil
	case BaselineDepsEscalate:
		return baselineFunc(func() []int { return e.team(true, true) }), nil
	case BaselineStrongTest:
		return baselineFunc(func() []int { return e.capableOnly(true) }), nil
	case BaselineStrongNaive:
		return baselineFunc(func() []int { return e.capableOnly(false) }), nil
	case BaselineStrongByTeam:
		return baselineFunc(e.strongByTeam), nil
	case BaselineHolistic:
		return baselineFunc(func() []int { return holistic.act(e) }), nil
	case BaselineHolisticSplit:
		return baselineFunc(func() []int { return holisticOrSplit.act(e) }), nil
	case BaselineHolisticFix:
		return baselineFunc(func() []int { return holisticFix.act(e) }), nil
	}
	if model, ok := strings.CutPrefix(name, soloPrefix); ok {
		for _, m := range e.p.Pool {
			if m == model {
				return baselineFunc(func() []int {
					if e.steps == 0 && e.agents[0].model.Name != model {
						e.agents[0].model, _ = modelByName(model)
						e.agents[0].strength = strengthOf(model)
						e.observe() // the masks of the re-backed coder
					}
					return e.single(0)
				}), nil
			}
		}
	}
	return nil, fmt.Errorf("env classeval: no baseline %q (have %s)", name, strings.Join(e.spec.Baselines, ", "))
}

type baselineFunc func() []int

// Act implements core.Baseline; the scripted policies never fail.
func (f baselineFunc) Act([]core.Observation) ([]int, error) { return f(), nil }

// legal reports whether agent i may take decision d now.
func (e *Env) legal(i, d int) bool { return e.masks[i][d] }

// rewritesOf counts the rewrites method j had.
func (e *Env) rewritesOf(j int) int { return max(0, e.methods[j].version-1) }

// freeActs is a joint action in which every busy agent waits and every
// free agent i takes decide(i): the frame of each scripted policy.
func (e *Env) freeActs(decide func(i int) int) []int {
	acts := make([]int, len(e.agents))
	for i := range acts {
		acts[i] = decWait
		if e.free(i) {
			acts[i] = decide(i)
		}
	}
	return acts
}

// claimOrSubmit is claim's decision for agent i, or submit when it has
// nothing to claim.
func (e *Env) claimOrSubmit(i int, depsFirst bool) int {
	if d := e.claim(i, depsFirst); d >= 0 {
		return d
	}
	return decSubmit
}

// capableShare is the share of the team's best strength a coder needs to
// work in strong_test and strong_naive.
const capableShare = 0.75

// capable reports whether agent i's strength is at least capableShare of
// the team's best.
func (e *Env) capable(i int) bool {
	return e.agents[i].strength >= capableShare*e.agents[e.strongest()].strength
}

// capableOnly is strong_test (careful) or strong_naive: the capable coders
// work, the others submit at once.
func (e *Env) capableOnly(careful bool) []int {
	return e.freeActs(func(i int) int {
		switch {
		case !e.capable(i):
			return decSubmit
		case careful:
			return e.careful(i, true, false)
		}
		return e.claimOrSubmit(i, false)
	})
}

// The rules of the holistic baselines (rules.go).
var (
	holistic        = rule{draft: draftClass}
	holisticOrSplit = rule{share: 0.6, draft: draftClass, minM: 3}
	holisticFix     = rule{share: 0.5, draft: draftClass, minM: 3, fix: fixAll, rewrites: 1}
)

// byTeamRules maps the team's strongest model to strong_by_team's rule; a
// team whose strongest model is not listed plays byTeamDefault. The table
// is the headroom test's per-team choice on 768 training seeds
// (BENCHMARKS.md, "Headroom").
var (
	byTeamRules = map[string]rule{
		"ChatGPT":            {share: 0.5, draft: draftClass, fix: fixAll, rewrites: 1},
		"GPT-4":              holisticFix,
		"CodeGeeX":           holisticFix,
		"instruct-StarCoder": {share: 0.6, deps: true},
		"WizardCoder":        {share: 0.6, deps: true},
	}
	byTeamDefault = rule{share: 0.6}
)

// strongByTeam is strong_by_team.
func (e *Env) strongByTeam() []int {
	r, ok := byTeamRules[e.agents[e.strongest()].model.Name]
	if !ok {
		r = byTeamDefault
	}
	return r.act(e)
}

// single is the lone careful coder w; the others submit at once.
func (e *Env) single(w int) []int {
	return e.freeActs(func(i int) int {
		if i != w {
			return decSubmit
		}
		return e.careful(i, true, false)
	})
}

// careful is a coder that rewrites its failing method (if it may rewrite,
// up to baselineRewrites), else runs its untested method's examples, else
// implements the next method (with context first when depsFirst), else
// submits.
func (e *Env) careful(i int, rewrite, depsFirst bool) int {
	if j := e.repairable(i); rewrite && j >= 0 && e.rewritesOf(j) < baselineRewrites {
		return decRepair
	}
	if e.legal(i, decRunExamples) {
		return decRunExamples
	}
	return e.claimOrSubmit(i, depsFirst)
}

// claim returns the implement decision agent i takes, decWait when it
// should wait for dependencies being written, or -1 when nothing is left
// to claim. Without depsFirst it implements in the class's order from the
// skeleton; with it, the first method whose dependencies are written, in
// context, waiting while others write.
func (e *Env) claim(i int, depsFirst bool) int {
	if e.nextUnclaimed() < 0 {
		return -1
	}
	if depsFirst {
		if e.legal(i, decImplementReady) {
			return decImplementReady
		}
		for _, m := range e.methods {
			if m.writing {
				return decWait
			}
		}
	}
	if e.legal(i, decImplement) {
		return decImplement
	}
	if e.legal(i, decImplementReady) {
		return decImplementReady
	}
	return -1
}

func (e *Env) parallelNaive() []int {
	return e.freeActs(func(i int) int {
		switch {
		case e.legal(i, decImplement):
			return decImplement
		case e.nextUnclaimed() < 0 || !e.legal(i, decImplementReady):
			return decSubmit
		}
		return decImplementReady
	})
}

func (e *Env) sop() []int {
	anyBusy := false
	for i, a := range e.agents {
		if !a.submitted && !e.free(i) {
			anyBusy = true
		}
	}
	unwritten := e.nextUnclaimed() >= 0
	teamTests, teamRewrites := false, false
	for i := range e.agents {
		if e.free(i) && e.legal(i, decRunExamples) {
			teamTests = true
		}
		if j := e.repairable(i); e.free(i) && j >= 0 && e.rewritesOf(j) == 0 {
			teamRewrites = true
		}
	}
	acts := e.freeActs(func(i int) int {
		switch {
		case unwritten:
			if d := e.claim(i, false); d >= 0 {
				return d
			}
		case anyBusy:
			// barrier
		case teamTests:
			if e.legal(i, decRunExamples) {
				return decRunExamples
			}
		case teamRewrites:
			if j := e.repairable(i); j >= 0 && e.rewritesOf(j) == 0 {
				return decRepair
			}
		default:
			return decSubmit
		}
		return decWait
	})
	// Nobody can claim what is left (no recording): end rather than wait.
	if unwritten && !anyBusy && allWait(acts, e) {
		for i := range acts {
			if e.free(i) {
				acts[i] = decSubmit
			}
		}
	}
	return acts
}

// allWait reports whether every free agent's decision is wait.
func allWait(acts []int, e *Env) bool {
	for i, d := range acts {
		if e.free(i) && d != decWait {
			return false
		}
	}
	return true
}

// team is the escalating and/or dependencies-first team.
func (e *Env) team(depsFirst, escalate bool) []int {
	s := e.strongest()
	acts := e.freeActs(func(i int) int {
		if escalate && i != s {
			return e.careful(i, false, depsFirst)
		}
		d := e.careful(i, true, depsFirst)
		if d == decSubmit && escalate && e.legal(i, decTakeOver) && e.takeable(i) >= 0 && e.rewritesOf(e.takeable(i)) < baselineRewrites {
			d = decTakeOver
		}
		if d == decSubmit && escalate && e.someoneBusy(i) {
			d = decWait // a teammate may still escalate a method
		}
		return d
	})
	e.unstick(acts, nil)
	return acts
}

// unstick breaks a deadlock in the joint action acts: when nobody can make
// progress while some wait for dependencies that no one is writing, each
// free agent implements from the skeleton instead (claims a method) or,
// with nothing to claim or when may (nil: everyone may) says no, submits.
func (e *Env) unstick(acts []int, may func(i int) bool) {
	if !allWait(acts, e) || e.someoneBusy(-1) {
		return
	}
	for i := range acts {
		if e.free(i) {
			if d := e.claim(i, false); d >= 0 && (may == nil || may(i)) {
				acts[i] = d
			} else {
				acts[i] = decSubmit
			}
		}
	}
}

// someoneBusy reports whether an agent other than i is busy.
func (e *Env) someoneBusy(i int) bool {
	for k, a := range e.agents {
		if k != i && !a.submitted && !e.free(k) {
			return true
		}
	}
	return false
}
