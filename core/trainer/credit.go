package trainer

import (
	"math"

	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/rollout"
)

// advantages returns, per result, one advantage per agent. With joint
// credit every agent gets its rollout's joint-reward advantage; with
// independent credit each agent's return is normalized within its group.
func (t *Trainer) advantages(results []rollout.EpisodeResult, T, G int) ([][]float64, int, error) {
	n := t.spec.NumAgents()
	adv := make([][]float64, len(results))
	for k := range adv {
		adv[k] = make([]float64, n)
	}
	zeroStd := 0
	if t.cfg.Credit == CreditJoint {
		groups, idx, empty := groupRewards(results, T, G, func(r rollout.EpisodeResult) float64 { return r.Reward })
		a, z, err := grpo.GroupAdvantages(groups, t.cfg.Baseline, t.cfg.Scale)
		if err != nil {
			return nil, 0, err
		}
		z += empty
		for g := range a {
			for j, v := range a[g] {
				for i := 0; i < n; i++ {
					adv[idx[g][j]][i] = v
				}
			}
		}
		return adv, z, nil
	}
	// Independent credit: the same per agent, on each agent's own return.
	for i := 0; i < n; i++ {
		groups, idx, empty := groupRewards(results, T, G, func(r rollout.EpisodeResult) float64 { return r.Episode.AgentReturns[i] })
		a, z, err := grpo.GroupAdvantages(groups, t.cfg.Baseline, t.cfg.Scale)
		if err != nil {
			return nil, 0, err
		}
		zeroStd += z + empty
		for g := range a {
			for j, v := range a[g] {
				adv[idx[g][j]][i] = v
			}
		}
	}
	return adv, int(math.Round(float64(zeroStd) / float64(n))), nil
}

// groupRewards collects the non-failed rewards of each task's group and the
// result index of each. A group whose every episode failed is left out
// (its decisions get no advantage); empty reports how many were.
func groupRewards(results []rollout.EpisodeResult, T, G int, f func(rollout.EpisodeResult) float64) (groups [][]float64, idx [][]int, empty int) {
	for task := 0; task < T; task++ {
		var rs []float64
		var ks []int
		for g := 0; g < G; g++ {
			k := task*G + g
			if results[k].Failed {
				continue
			}
			rs = append(rs, f(results[k]))
			ks = append(ks, k)
		}
		if len(rs) == 0 {
			empty++
			continue
		}
		groups, idx = append(groups, rs), append(idx, ks)
	}
	return groups, idx, empty
}
