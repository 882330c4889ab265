package rollout

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
)

// actor picks every agent's decision for one step. decisions and logps
// have one slot per agent; logps is only meaningful for learned policies.
type actor interface {
	act(obs []core.Observation, rng *rand.Rand, decisions []int, logps []float64, scratch []float64) error
}

// policyActor is a learned policy: each agent from its own observation.
type policyActor struct {
	p      *policy.Policy
	greedy bool
}

func (a policyActor) act(obs []core.Observation, rng *rand.Rand, decisions []int, logps []float64, scratch []float64) error {
	for i, o := range obs {
		if err := a.p.LogProbs(i, o.Features, o.Mask, scratch); err != nil {
			return fmt.Errorf("agent %d: %w", i, err)
		}
		var d int
		if a.greedy {
			d = policy.Greedy(scratch)
		} else {
			d = policy.Sample(scratch, rng)
		}
		if math.IsInf(scratch[d], -1) {
			return fmt.Errorf("agent %d: the policy picked illegal decision %d (is the mask empty?)", i, d)
		}
		decisions[i], logps[i] = d, scratch[d]
	}
	return nil
}

// randomActor picks uniformly among the legal decisions.
type randomActor struct{ n int }

func (a randomActor) act(obs []core.Observation, rng *rand.Rand, decisions []int, logps []float64, _ []float64) error {
	for i, o := range obs {
		legal := 0
		for d := 0; d < a.n; d++ {
			if o.Legal(d) {
				legal++
			}
		}
		if legal == 0 {
			return fmt.Errorf("agent %d: no legal decision", i)
		}
		k := rng.IntN(legal)
		for d := 0; d < a.n; d++ {
			if o.Legal(d) {
				if k == 0 {
					decisions[i] = d
					break
				}
				k--
			}
		}
		logps[i] = -math.Log(float64(legal))
	}
	return nil
}

// baselineActor is an env's scripted joint policy. An error from it fails
// the episode, like any other actor error.
type baselineActor struct {
	b    core.Baseline
	name string
	n    int
}

func (a baselineActor) act(obs []core.Observation, _ *rand.Rand, decisions []int, logps []float64, _ []float64) error {
	ds, err := a.b.Act(obs)
	if err != nil {
		return fmt.Errorf("baseline %s: %w", a.name, err)
	}
	if len(ds) != len(obs) {
		return fmt.Errorf("baseline %s returned %d decisions for %d agents", a.name, len(ds), len(obs))
	}
	for i, d := range ds {
		if d < 0 || d >= a.n || !obs[i].Legal(d) {
			return fmt.Errorf("baseline %s: agent %d: illegal decision %d", a.name, i, d)
		}
		decisions[i], logps[i] = d, 0
	}
	return nil
}
