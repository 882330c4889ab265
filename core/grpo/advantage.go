package grpo

import (
	"fmt"
	"math"
)

// flatTolerance decides when a group's rewards count as all equal: their
// spread (max − min) is at most flatTolerance·max(1, max |r|). This absorbs
// rounding noise in reward sums without hiding real differences.
const flatTolerance = 1e-12

// GroupAdvantages turns the rewards of groups of rollouts (one group per
// task instance, one reward per rollout) into advantages
// A = (r − baseline) / scale:
//
//   - baseline "mean": the group mean; "rloo": for each member, the mean of
//     the other members (leave-one-out); "max": the group maximum (so A ≤ 0).
//   - scale "group": the group's population standard deviation
//     √(Σ(r−mean)²/G); "batch": the population standard deviation of all
//     rewards of all groups pooled, around their overall mean; "none": 1.
//
// A group whose rewards are all equal (to within rounding, see
// flatTolerance), including a group of one, carries no learning signal: all
// its members get advantage 0 under every baseline and scale, and it is
// counted in zeroStdGroups. Scales are never divided by when they are
// (near) zero: if every group is flat, all advantages are 0.
//
// Errors: unknown baseline or scale, an empty group, a non-finite reward.
func GroupAdvantages(groups [][]float64, baseline Baseline, scale Scale) (adv [][]float64, zeroStdGroups int, err error) {
	switch baseline {
	case BaselineMean, BaselineRLOO, BaselineMax:
	default:
		return nil, 0, fmt.Errorf("grpo: unknown baseline %q (want mean, rloo or max)", baseline)
	}
	switch scale {
	case ScaleGroup, ScaleBatch, ScaleNone:
	default:
		return nil, 0, fmt.Errorf("grpo: unknown scale %q (want group, batch or none)", scale)
	}
	var total, count float64
	for g, rs := range groups {
		if len(rs) == 0 {
			return nil, 0, fmt.Errorf("grpo: group %d is empty", g)
		}
		for i, r := range rs {
			if math.IsNaN(r) || math.IsInf(r, 0) {
				return nil, 0, fmt.Errorf("grpo: group %d reward %d is %v", g, i, r)
			}
			total += r
			count++
		}
	}
	batchStd := 0.0
	if scale == ScaleBatch && count > 0 {
		mean := total / count
		var ss float64
		for _, rs := range groups {
			for _, r := range rs {
				ss += (r - mean) * (r - mean)
			}
		}
		batchStd = math.Sqrt(ss / count)
	}

	adv = make([][]float64, len(groups))
	for g, rs := range groups {
		out := make([]float64, len(rs))
		adv[g] = out
		lo, hi, big := rs[0], rs[0], 0.0
		var sum float64
		for _, r := range rs {
			lo, hi = min(lo, r), max(hi, r)
			big = max(big, math.Abs(r))
			sum += r
		}
		if hi-lo <= flatTolerance*max(1, big) {
			zeroStdGroups++
			continue // all zero
		}
		n := float64(len(rs))
		mean := sum / n
		var div float64
		switch scale {
		case ScaleGroup:
			var ss float64
			for _, r := range rs {
				ss += (r - mean) * (r - mean)
			}
			div = math.Sqrt(ss / n)
		case ScaleBatch:
			div = batchStd
		case ScaleNone:
			div = 1
		}
		if !(div > 1e-300) { // cannot happen for a non-flat group; be safe
			continue
		}
		for i, r := range rs {
			var b float64
			switch baseline {
			case BaselineMean:
				b = mean
			case BaselineRLOO:
				b = (sum - r) / (n - 1)
			case BaselineMax:
				b = hi
			}
			out[i] = (r - b) / div
		}
	}
	return adv, zeroStdGroups, nil
}
