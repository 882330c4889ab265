package coding

import (
	"fmt"
	"math/rand/v2"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/codetokens"
)

// Simulate is the sim backend's stand-in for the agent's LLM (it makes Env
// a core.Simulator). It answers the request Prompt prepared for the agent:
//
//   - implement: the canonical solution with probability PCorrect, else a
//     mutant drawn uniformly from the function's pool;
//   - repair: the canonical solution with probability PRepairFix, else a
//     (possibly the same) mutant;
//   - review_peer: for a function that is not the canonical solution, the
//     canonical one with probability PReviewFix and NO_CHANGES otherwise;
//     for a canonical one, a mutant with probability PReviewBreak and
//     NO_CHANGES otherwise;
//   - nothing to work on: DONE.
//
// Code comes in a ```python block, as a chat model writes it. Token counts
// are the env's estimate (see References in the package doc) of the
// request and of the answer.
func (e *Env) Simulate(agent, decision int, req core.ChatRequest, rng *rand.Rand) (core.SimCompletion, error) {
	if agent < 0 || agent >= len(e.agents) {
		return core.SimCompletion{}, fmt.Errorf("env coding: simulate: agent %d out of range", agent)
	}
	p := e.agents[agent].pend
	if p == nil || p.decision != decision {
		return core.SimCompletion{}, fmt.Errorf("env coding: simulate: agent %d: no prompt prepared for decision %d (call Prompt first)", agent, decision)
	}
	text := "DONE"
	if p.fn >= 0 {
		f := e.fns[p.fn]
		info := f.info
		mutant := func() string {
			if len(info.mutants) == 0 {
				return info.canonicalText
			}
			return fence(info.mutants[rng.IntN(len(info.mutants))].Code)
		}
		switch decision {
		case decImplement:
			if rng.Float64() < e.p.PCorrect {
				text = info.canonicalText
			} else {
				text = mutant()
			}
		case decRepair:
			if rng.Float64() < e.p.PRepairFix {
				text = info.canonicalText
			} else {
				text = mutant()
			}
		case decReviewPeer:
			text = noChanges
			if f.canonical {
				if rng.Float64() < e.p.PReviewBreak {
					text = mutant()
				}
			} else if rng.Float64() < e.p.PReviewFix {
				text = info.canonicalText
			}
		default:
			return core.SimCompletion{}, fmt.Errorf("env coding: simulate: decision %d needs no text", decision)
		}
	}
	return core.SimCompletion{Text: text, PromptTokens: requestTokens(req), CompletionTokens: codetokens.Count(text)}, nil
}
