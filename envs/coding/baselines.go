package coding

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
)

// Baseline names offered through [Env.Baseline]; BaselineSingleAgent is
// the reference baseline (core.EnvSpec.ReferenceBaseline), whose time and
// tokens the reference metrics estimate.
const (
	BaselineSingleAgent   = "single_agent"
	BaselineParallelNaive = "parallel_naive"
	BaselineSOP           = "sop"
)

// baselineRepairs bounds the repairs the scripted baselines try on one
// function before they leave it failing.
const baselineRepairs = 4

// Baseline returns a scripted joint policy bound to this env (it makes Env a
// core.BaselineProvider):
//
//   - single_agent: coder0 alone implements each function, runs its
//     examples and repairs it until they pass (at most 4 times), then
//     moves to the next; the others submit once every function is claimed.
//   - parallel_naive: every free coder implements the next unclaimed
//     function; nobody tests; each submits when nothing is left to claim.
//   - sop: a fixed procedure with barriers: everybody implements until every
//     function is written; when all are idle, each tests its functions; when
//     all are idle, each repairs every failure once; when all are idle, each
//     tests the repaired ones again; then all submit.
func (e *Env) Baseline(name string) (core.Baseline, error) {
	switch name {
	case BaselineSingleAgent:
		return baselineFunc(e.singleAgent), nil
	case BaselineParallelNaive:
		return baselineFunc(e.parallelNaive), nil
	case BaselineSOP:
		return baselineFunc(e.sop), nil
	}
	return nil, fmt.Errorf("env coding: no baseline %q (have %s, %s, %s)", name, BaselineSingleAgent, BaselineParallelNaive, BaselineSOP)
}

type baselineFunc func(obs []core.Observation) []int

// Act implements core.Baseline; the scripted policies never fail.
func (f baselineFunc) Act(obs []core.Observation) ([]int, error) { return f(obs), nil }

func (e *Env) singleAgent(obs []core.Observation) []int {
	acts := make([]int, len(e.agents))
	for i := range acts {
		acts[i] = decWait
		if !e.free(i) {
			continue
		}
		if i > 0 {
			if e.nextUnclaimed() < 0 {
				acts[i] = decSubmit
			}
			continue
		}
		acts[i] = e.testRepairOrNext(i, baselineRepairs)
	}
	return acts
}

// testRepairOrNext is the careful coder: repair a failing function (while
// under the bound), else test untested code, else implement the next
// function, else submit.
func (e *Env) testRepairOrNext(i, maxRepairs int) int {
	if j := e.failing(i); j >= 0 && e.fns[j].repairs < maxRepairs {
		return decRepair
	}
	if e.testable(i) >= 0 {
		return decRunTests
	}
	if e.nextUnclaimed() >= 0 {
		return decImplement
	}
	return decSubmit
}

func (e *Env) parallelNaive(obs []core.Observation) []int {
	acts := make([]int, len(e.agents))
	claimable := e.unclaimed()
	for i := range acts {
		acts[i] = decWait
		if !e.free(i) {
			continue
		}
		if claimable > 0 {
			acts[i] = decImplement
			claimable--
		} else if e.nextUnclaimed() < 0 {
			acts[i] = decSubmit
		}
	}
	return acts
}

func (e *Env) sop(obs []core.Observation) []int {
	acts := make([]int, len(e.agents))
	anyBusy, anyUnwritten := false, false
	for i, a := range e.agents {
		if !a.submitted && !e.free(i) {
			anyBusy = true
		}
	}
	for _, f := range e.fns {
		if !f.hasCode {
			anyUnwritten = true
		}
	}
	// Claims made by earlier agents in this same joint action.
	claimable := e.unclaimed()
	// What each phase still has to do, team-wide.
	phase := func(i int) int {
		if j := e.testable(i); j >= 0 && e.fns[j].allRepairs <= 1 {
			return decRunTests
		}
		if j := e.failing(i); j >= 0 && e.fns[j].allRepairs == 0 {
			return decRepair
		}
		return decWait
	}
	teamTests, teamRepairs := false, false
	for i := range e.agents {
		switch phase(i) {
		case decRunTests:
			teamTests = true
		case decRepair:
			teamRepairs = true
		}
	}
	for i := range acts {
		acts[i] = decWait
		if !e.free(i) {
			continue
		}
		switch {
		case claimable > 0:
			acts[i] = decImplement
			claimable--
		case anyUnwritten || anyBusy:
			// barrier
		case teamTests:
			if phase(i) == decRunTests {
				acts[i] = decRunTests
			}
		case teamRepairs:
			if phase(i) == decRepair {
				acts[i] = decRepair
			}
		default:
			acts[i] = decSubmit
		}
	}
	return acts
}
