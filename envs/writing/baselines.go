package writing

import (
	"fmt"

	"github.com/troupe-dev/troupe/core"
)

// Baseline returns one of the env's scripted joint policies
// (core.BaselineProvider), bound to this env instance:
//
//   - single_agent: writer 0 reads the house style once, then drafts every
//     unit in template order and submits; the others wait and submit once
//     every unit is claimed. Its makespan is reference_makespan_s when the
//     runtime's latency model equals the env's ref_* params.
//   - parallel_naive: every writer drafts the longest unclaimed unit as
//     soon as it is free and never reads the house style; it submits when
//     nothing is left to claim.
//   - sop: a fixed MetaGPT-style procedure: everyone reads the house style,
//     drafts in template order, waits until every unit is drafted, then
//     edits every peer unit once (each unit by one writer other than its
//     author) and submits.
func (e *Env) Baseline(name string) (core.Baseline, error) {
	switch name {
	case BaselineSingleAgent:
		return scripted(e.actSingle), nil
	case BaselineParallelNaive:
		return scripted(e.actNaive), nil
	case BaselineSOP:
		return scripted(e.actSOP), nil
	}
	return nil, fmt.Errorf("writing: no baseline %q (have %s, %s, %s)", name, BaselineSingleAgent, BaselineParallelNaive, BaselineSOP)
}

// scripted is a joint policy that decides each agent from its mask and the
// env's state.
type scripted func(i int, mask []bool) int

// Act implements core.Baseline; a scripted policy never fails.
func (s scripted) Act(obs []core.Observation) ([]int, error) {
	out := make([]int, len(obs))
	for i, o := range obs {
		m := o.Mask
		if m == nil {
			m = allLegal()
		}
		out[i] = s(i, m)
	}
	return out, nil
}

func allLegal() []bool {
	m := make([]bool, numDecisions)
	for i := range m {
		m[i] = true
	}
	return m
}

// first returns the first legal decision of prefs, or decWait.
func first(mask []bool, prefs ...int) int {
	for _, d := range prefs {
		if mask[d] {
			return d
		}
	}
	return decWait
}

func (e *Env) actSingle(i int, mask []bool) int {
	if i != 0 {
		return first(mask, decSubmit)
	}
	if !e.agents[0].read {
		return first(mask, decReadStyle)
	}
	return first(mask, decDraftNext, decSubmit)
}

func (e *Env) actNaive(i int, mask []bool) int {
	return first(mask, decDraftLongest, decSubmit)
}

func (e *Env) actSOP(i int, mask []bool) int {
	if !e.agents[i].read {
		return first(mask, decReadStyle)
	}
	if mask[decDraftNext] {
		return decDraftNext
	}
	for k := range e.units {
		if e.units[k].status != done {
			return decWait // barrier: the edit pass starts when every unit is drafted
		}
	}
	return first(mask, decEditPeer, decSubmit)
}
