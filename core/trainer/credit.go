package trainer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
)

// credit is what step 3 of [Trainer.Step] hands to the update: an
// advantage for each recorded decision that is credited.
type credit struct {
	// decision[k][j] is the advantage of results[k].Decisions[j], and
	// credited[k][j] whether it has one (a decision without one is left
	// out of the update).
	decision [][]float64
	credited [][]bool
	// agent[k][i] is agent i's advantage in results[k] (with
	// counterfactual credit, the mean over its credited decisions).
	agent [][]float64
	// groups is the number of advantage groups (task groups, or branch
	// points), zeroStd how many of them were flat.
	groups, zeroStd int
	// branches counts the replayed episodes, failedBranches those that
	// failed, branchSteps their env steps.
	branches, failedBranches int
	branchSteps              int64
	// valueLoss is the critic's loss before its update (credit value).
	valueLoss float64
}

// credit computes the advantages of the iteration's results (T tasks of G
// rollouts, played as jobs) with the configured credit.
func (t *Trainer) credit(ctx context.Context, jobs []rollout.Job, results []rollout.EpisodeResult, T, G int) (credit, error) {
	switch t.cfg.Credit {
	case CreditCounterfactual:
		return t.counterfactual(ctx, jobs, results)
	case CreditValue:
		c, loss, err := t.valueCredit(results)
		c.valueLoss = loss
		return c, err
	}
	agent, zeroStd, err := t.episodeAdvantages(results, T, G)
	if err != nil {
		return credit{}, err
	}
	c := credit{agent: agent, groups: T, zeroStd: zeroStd}
	c.decision, c.credited = make([][]float64, len(results)), make([][]bool, len(results))
	for k, r := range results {
		for _, d := range r.Decisions {
			c.decision[k] = append(c.decision[k], agent[k][d.Agent])
			c.credited[k] = append(c.credited[k], true)
		}
	}
	return c, nil
}

// episodeAdvantages returns, per result, one advantage per agent. With
// joint credit every agent gets its rollout's joint-reward advantage; with
// independent credit each agent's return is normalized within its group.
func (t *Trainer) episodeAdvantages(results []rollout.EpisodeResult, T, G int) ([][]float64, int, error) {
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

// branchPoint is one recorded decision that is branched: results[k].
// Decisions[j], made by agent at step.
type branchPoint struct {
	k, j, step, agent int
	// legal lists the agent's legal decisions; partners[p] is the others'
	// joint decision of partner set p (p = 0: as recorded; the agent's own
	// entry is ignored).
	legal    []int
	partners [][]int
	// value[a][p] is the joint reward of the branch with legal[a] against
	// partners[p]; failed marks a point one of whose branches failed.
	value  [][]float64
	failed bool
}

// counterfactual is the credit of [CreditCounterfactual]:
//
//  1. points: from each non-failed episode, BranchPoints of its recorded
//     decisions, drawn without replacement by a generator derived from the
//     master seed, the iteration and the episode's index;
//  2. partners: at the point's step, the others' recorded decisions, and
//     BranchPartners joint decisions drawn from the current policy at the
//     others' recorded observations;
//  3. branches: for each legal decision a of the agent and each partner
//     set, a replay of the episode (its task seed, its rollout seed) with
//     the recorded decisions up to the step, then a and the partner set at
//     the step, then the policy; the recorded decision against the recorded
//     partners is the episode itself and is not replayed;
//  4. play every branch of the iteration through the pool (Pool.Replay),
//     results in job order, whatever the number of workers;
//  5. values: V(a) = the mean or the max (BranchAggregate) over the
//     partner sets of the branches' joint rewards;
//  6. advantages: each point's values {V(a)} form one group of
//     grpo.GroupAdvantages (the configured baseline and scale), and the
//     recorded decision gets its own entry. A point with a failed branch
//     gets none.
func (t *Trainer) counterfactual(ctx context.Context, jobs []rollout.Job, results []rollout.EpisodeResult) (credit, error) {
	n, nd := t.spec.NumAgents(), len(t.spec.Decisions)
	c := credit{agent: make([][]float64, len(results)), decision: make([][]float64, len(results)), credited: make([][]bool, len(results))}

	// 1. Points, and 2. partners.
	var points []*branchPoint
	logp := make([]float64, nd)
	for k := range results {
		r := &results[k]
		c.agent[k] = make([]float64, n)
		c.decision[k] = make([]float64, len(r.Decisions))
		c.credited[k] = make([]bool, len(r.Decisions))
		if r.Failed || len(r.Decisions) == 0 {
			continue
		}
		rng := rand.New(rand.NewPCG(rollout.DeriveSeed(t.setup.Seed, 0x6272616e6368, uint64(t.iter)), uint64(k))) // "branch"
		picks := rng.Perm(len(r.Decisions))[:min(t.cfg.BranchPoints, len(r.Decisions))]
		slices.Sort(picks)
		for _, j := range picks {
			d := r.Decisions[j]
			bp := &branchPoint{k: k, j: j, step: d.Step, agent: d.Agent}
			for a := 0; a < nd; a++ {
				if d.Mask[a] {
					bp.legal = append(bp.legal, a)
				}
			}
			recorded := make([]int, n)
			for i := range recorded {
				recorded[i] = -1
			}
			var others []rollout.Decision
			for _, o := range r.Decisions {
				if o.Step == d.Step {
					recorded[o.Agent] = o.Action
					if o.Agent != d.Agent {
						others = append(others, o)
					}
				}
			}
			bp.partners = [][]int{recorded}
			for p := 0; p < t.cfg.BranchPartners && len(others) > 0; p++ {
				set := slices.Clone(recorded)
				for _, o := range others {
					if err := t.pol.LogProbs(o.Agent, o.Features, o.Mask, logp); err != nil {
						return c, fmt.Errorf("branch partners: agent %d: %w", o.Agent, err)
					}
					set[o.Agent] = policy.Sample(logp, rng)
				}
				bp.partners = append(bp.partners, set)
			}
			points = append(points, bp)
		}
	}

	// 3. Branches, and 4. play them.
	var branchJobs []rollout.Job
	type slot struct{ point, a, p int }
	var slots []slot
	for pi, bp := range points {
		r := &results[bp.k]
		prefix := recordedPrefix(r.Decisions, n, bp.step)
		bp.value = make([][]float64, len(bp.legal))
		for ai, a := range bp.legal {
			bp.value[ai] = make([]float64, len(bp.partners))
			for p, set := range bp.partners {
				if a == r.Decisions[bp.j].Action && p == 0 {
					bp.value[ai][p] = r.Reward
					continue
				}
				at := slices.Clone(set)
				at[bp.agent] = a
				pre := append(slices.Clip(prefix), at)
				branchJobs = append(branchJobs, rollout.Job{Task: jobs[bp.k].Task, Rollout: jobs[bp.k].Rollout, Prefix: pre})
				slots = append(slots, slot{pi, ai, p})
			}
		}
	}
	branched, err := t.pool.Replay(ctx, t.iter+1, branchJobs, t.pol)
	if err != nil {
		return c, err
	}
	c.branches = len(branched)
	for s, b := range branched {
		bp := points[slots[s].point]
		if b.Failed {
			c.failedBranches++
			bp.failed = true
			continue
		}
		c.branchSteps += int64(b.Episode.Steps)
		bp.value[slots[s].a][slots[s].p] = b.Reward
	}
	if c.branches > 0 {
		if ratio := float64(c.failedBranches) / float64(c.branches); ratio > t.cfg.MaxFailureRatio {
			return c, fmt.Errorf("%d of %d branch episodes failed (%.0f%% > max_failure_ratio %.0f%%): %s",
				c.failedBranches, c.branches, 100*ratio, 100*t.cfg.MaxFailureRatio, rollout.FailureSummary(branched))
		}
	}

	// 5. Values, and 6. advantages.
	var groups [][]float64
	var credited []*branchPoint
	for _, bp := range points {
		if bp.failed {
			continue
		}
		vs := make([]float64, len(bp.legal))
		for ai, row := range bp.value {
			vs[ai] = aggregate(t.cfg.BranchAggregate, row)
		}
		groups, credited = append(groups, vs), append(credited, bp)
	}
	adv, zeroStd, err := grpo.GroupAdvantages(groups, t.cfg.Baseline, t.cfg.Scale)
	if err != nil {
		return c, err
	}
	c.groups, c.zeroStd = len(points), zeroStd+(len(points)-len(credited))
	sums, counts := make([][]float64, len(results)), make([][]int, len(results))
	for g, bp := range credited {
		taken := slices.Index(bp.legal, results[bp.k].Decisions[bp.j].Action)
		c.decision[bp.k][bp.j], c.credited[bp.k][bp.j] = adv[g][taken], true
		if sums[bp.k] == nil {
			sums[bp.k], counts[bp.k] = make([]float64, n), make([]int, n)
		}
		sums[bp.k][bp.agent] += adv[g][taken]
		counts[bp.k][bp.agent]++
	}
	for k := range sums {
		for i := range sums[k] {
			if counts[k][i] > 0 {
				c.agent[k][i] = sums[k][i] / float64(counts[k][i])
			}
		}
	}
	return c, nil
}

// recordedPrefix returns the recorded joint decisions of steps 0..step−1:
// row s holds each agent's recorded decision at step s, or −1 where the
// agent had a single legal decision (not recorded; the policy takes it).
func recordedPrefix(ds []rollout.Decision, n, step int) [][]int {
	prefix := make([][]int, step)
	for s := range prefix {
		prefix[s] = make([]int, n)
		for i := range prefix[s] {
			prefix[s][i] = -1
		}
	}
	for _, d := range ds {
		if d.Step < step {
			prefix[d.Step][d.Agent] = d.Action
		}
	}
	return prefix
}

// aggregate combines an alternative's values against the partner sets.
func aggregate(a Aggregate, vs []float64) float64 {
	if a == AggregateMax {
		return slices.Max(vs)
	}
	sum := 0.0
	for _, v := range vs {
		sum += v
	}
	return sum / float64(len(vs))
}
