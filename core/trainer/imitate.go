package trainer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
)

// imitationSeed derives the task seeds of the demonstrations ("imit").
const imitationSeed = 0x696d6974

// imitationBatch is the number of decisions per Adam step of imitation.
const imitationBatch = 256

// ImitationStats summarises the warm start of [Config.Imitate].
type ImitationStats struct {
	// Baseline is the imitated baseline; Episodes the demonstrations
	// played and FailedEpisodes those that failed (left out); Decisions
	// the recorded decisions with more than one legal choice.
	Baseline       string `json:"baseline"`
	Episodes       int    `json:"episodes"`
	FailedEpisodes int    `json:"failed_episodes"`
	Decisions      int    `json:"decisions"`
	// LossBefore and LossAfter are the mean negative log-likelihood of
	// the demonstrated decisions before and after imitation, in nats;
	// Agreement is the fraction of them the greedy policy takes after it.
	LossBefore float64 `json:"loss_before"`
	LossAfter  float64 `json:"loss_after"`
	Agreement  float64 `json:"agreement"`
}

// fullFit is the agreement below which the trainer warns that the warm
// start is not the baseline: on ClassEval, an imitation that took 97.3 %
// of strong_by_team's decisions scored 0.020 below the rule on held-out
// classes before any GRPO update (BENCHMARKS.md).
const fullFit = 0.99

// partialFit returns the warning to log when the imitated policy takes
// fewer than fullFit of the demonstrated decisions, or "" when it fits.
func (s ImitationStats) partialFit() string {
	if s.Agreement >= fullFit {
		return ""
	}
	return fmt.Sprintf("imitation: the policy takes %.1f %% of %s's decisions, so it does not start as that rule; "+
		"raise imitate_epochs if the rule decides from what its agents observe (a rule that reads more, such as a centralized planner, cannot be fitted fully)",
		100*s.Agreement, s.Baseline)
}

// imitate is the warm start of [Config.Imitate] (behaviour cloning): it
// plays ImitateEpisodes episodes of the env's baseline cfg.Imitate on
// training task seeds (even, derived from the master seed apart from the
// iterations'), records every decision that had more than one legal
// choice with the deciding agent's own observation and mask, and fits pol
// to them by cross-entropy, ImitateEpochs passes of Adam over shuffled
// minibatches of imitationBatch decisions with ImitateLearningRate and the
// run's gradient clipping. Each agent's decision is learned from its own
// observation only, so what is learned stays decentralized even when the
// baseline reads more.
func imitate(ctx context.Context, p *rollout.Pool, seed uint64, cfg Config, pol *policy.Policy) (ImitationStats, error) {
	st := ImitationStats{Baseline: cfg.Imitate, Episodes: cfg.ImitateEpisodes}
	jobs := make([]rollout.Job, cfg.ImitateEpisodes)
	for k := range jobs {
		ts := rollout.TrainTaskSeed(rollout.DeriveSeed(seed, imitationSeed), 0, k)
		jobs[k] = rollout.Job{Task: ts, Rollout: rollout.RolloutSeed(ts, 0)}
	}
	results, err := p.Demonstrate(ctx, jobs, cfg.Imitate)
	if err != nil {
		return st, fmt.Errorf("imitate %s: %w", cfg.Imitate, err)
	}
	var agents []int
	var obs [][]float64
	var masks [][]bool
	var actions []int
	for _, r := range results {
		if r.Failed {
			st.FailedEpisodes++
			continue
		}
		for _, d := range r.Decisions {
			agents, obs, masks, actions = append(agents, d.Agent), append(obs, d.Features), append(masks, d.Mask), append(actions, d.Action)
		}
	}
	st.Decisions = len(actions)
	if st.FailedEpisodes > 0 && float64(st.FailedEpisodes) > cfg.MaxFailureRatio*float64(len(results)) {
		return st, fmt.Errorf("imitate %s: %d of %d demonstrations failed (more than max_failure_ratio %.0f%%): %s",
			cfg.Imitate, st.FailedEpisodes, len(results), 100*cfg.MaxFailureRatio, rollout.FailureSummary(results))
	}
	if st.Decisions == 0 {
		return st, fmt.Errorf("imitate %s: its %d demonstrations hold no decision with more than one legal choice", cfg.Imitate, len(results))
	}

	n, d := len(actions), pol.Config().NumDecisions
	var ws policy.Workspace
	// nll returns the mean negative log-likelihood of rows and, with
	// grad, adds its gradient to grad.
	lp := make([]float64, d)
	dz := make([]float64, imitationBatch*d)
	nll := func(rows []int, grad []float64) (loss float64, agree int, err error) {
		ra, ro := make([]int, len(rows)), make([][]float64, len(rows))
		for i, r := range rows {
			ra[i], ro[i] = agents[r], obs[r]
		}
		logits, err := pol.Forward(&ws, ra, ro)
		if err != nil {
			return 0, 0, err
		}
		inv := 1 / float64(len(rows))
		dz = dz[:len(rows)*d]
		for i, r := range rows {
			if err := policy.LogSoftmax(logits[i*d:(i+1)*d], masks[r], lp); err != nil {
				return 0, 0, err
			}
			loss -= lp[actions[r]]
			if policy.Greedy(lp) == actions[r] {
				agree++
			}
			for k := range d {
				g := 0.0
				if !math.IsInf(lp[k], -1) {
					g = math.Exp(lp[k])
				}
				if k == actions[r] {
					g--
				}
				dz[i*d+k] = g * inv
			}
		}
		if grad != nil {
			if err := pol.Backward(&ws, dz, grad); err != nil {
				return 0, 0, err
			}
		}
		return loss * inv, agree, nil
	}
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	measure := func() (float64, float64, error) {
		var loss float64
		agree := 0
		for s := 0; s < n; s += imitationBatch {
			rows := all[s:min(s+imitationBatch, n)]
			l, a, err := nll(rows, nil)
			if err != nil {
				return 0, 0, err
			}
			loss += l * float64(len(rows))
			agree += a
		}
		return loss / float64(n), float64(agree) / float64(n), nil
	}
	if st.LossBefore, _, err = measure(); err != nil {
		return st, err
	}
	adam := policy.NewAdam(pol.NumParams(), cfg.ImitateLearningRate)
	grad := make([]float64, pol.NumParams())
	rng := rand.New(rand.NewPCG(rollout.DeriveSeed(seed, imitationSeed, 1), 0))
	order := append([]int(nil), all...)
	for epoch := 0; epoch < cfg.ImitateEpochs; epoch++ {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for s := 0; s < n; s += imitationBatch {
			clear(grad)
			if _, _, err := nll(order[s:min(s+imitationBatch, n)], grad); err != nil {
				return st, err
			}
			if norm := policy.ClipGradNorm(grad, cfg.MaxGradNorm); math.IsNaN(norm) || math.IsInf(norm, 0) {
				return st, fmt.Errorf("imitate %s: non-finite gradient at epoch %d (lower the learning rate)", cfg.Imitate, epoch)
			}
			if err := adam.Step(pol.Params(), grad); err != nil {
				return st, err
			}
		}
	}
	st.LossAfter, st.Agreement, err = measure()
	return st, err
}
