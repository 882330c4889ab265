package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
)

// TargetAgentfile is the time-to-target run's default agentfile: the
// default project, relative to the repository root.
const TargetAgentfile = "agentfile.toml"

// The writing targets (DESIGN.md §7), judged on evaluation seeds.
const (
	TargetConsistency = 0.987
	TargetSpeedup     = 3.0
)

// TargetPoint is one evaluation during the time-to-target run.
type TargetPoint struct {
	Iteration   int     `json:"iteration"`
	TrainWallS  float64 `json:"train_wall_s"`
	Consistency float64 `json:"consistency"`
	Speedup     float64 `json:"speedup"`
	Episodes    int     `json:"episodes"`
	// FailedEpisodes counts the policy's evaluation episodes that failed
	// (a crash, a plugin fault); consistency and speedup are means over
	// the others. A point with failed episodes does not reach the targets,
	// whatever its means.
	FailedEpisodes int `json:"failed_episodes"`
}

// meets reports whether p reaches both targets with every episode scored.
func (p TargetPoint) meets() bool {
	return p.FailedEpisodes == 0 && p.Consistency >= TargetConsistency && p.Speedup >= TargetSpeedup
}

// TargetResult is the time-to-target section.
type TargetResult struct {
	Agentfile         string  `json:"agentfile"`
	TargetConsistency float64 `json:"target_consistency"`
	TargetSpeedup     float64 `json:"target_speedup"`
	Workers           int     `json:"workers"`
	MaxIterations     int     `json:"max_iterations"`
	EvalEvery         int     `json:"eval_every"`
	EvalEpisodes      int     `json:"eval_episodes"`
	EvalSeed          uint64  `json:"eval_seed"`
	// Reached says whether both targets were met with no evaluation
	// episode failed; Iterations is the iteration at which they first
	// were (or the last one run).
	Reached    bool `json:"reached"`
	Iterations int  `json:"iterations"`
	// FailedEpisodes is the last evaluation's failed episodes, and
	// ReferenceFailedEpisodes the reference baseline's (its mean makespan
	// is over the others). NotReachedForFailures says the means met the
	// targets at some evaluation but failed episodes kept it from
	// counting.
	FailedEpisodes          int  `json:"failed_episodes"`
	ReferenceFailedEpisodes int  `json:"reference_failed_episodes"`
	NotReachedForFailures   bool `json:"not_reached_for_failures,omitempty"`
	// TrainWallS is what `troupe train` would have spent to get there:
	// building the setup and the trainer plus the iterations; EvalWallS
	// is the suite's own evaluations (not part of training), TotalWallS
	// both.
	TrainWallS  float64       `json:"train_wall_s"`
	EvalWallS   float64       `json:"eval_wall_s"`
	TotalWallS  float64       `json:"total_wall_s"`
	Consistency float64       `json:"consistency"`
	Speedup     float64       `json:"speedup"`
	History     []TargetPoint `json:"history"`
	// Confirm re-evaluates the policy that met the targets on the
	// agentfile's own [eval] episodes, as `troupe train` ends.
	Confirm *TargetPoint `json:"confirm,omitempty"`
	Load1   float64      `json:"load1"`
}

// TargetOptions configure MeasureTimeToTarget.
type TargetOptions struct {
	EvalEvery    int // iterations between evaluations (≥ 1)
	EvalEpisodes int // evaluation seeds per evaluation
	// MaxIterations stops the run (0: the agentfile's train.iterations).
	MaxIterations int
	// Confirm re-evaluates on the agentfile's [eval] episodes at the end.
	Confirm bool
	// Progress, if set, sees every evaluation.
	Progress func(TargetPoint)
}

// MeasureTimeToTarget trains on the agentfile at path as `troupe train`
// does (core/agentfile Load + Build, trainer.Trainer), evaluating the
// greedy policy every EvalEvery iterations on EvalEpisodes evaluation
// seeds, and stops at the first evaluation where consistency ≥
// TargetConsistency and speedup (single_agent makespan ÷ the policy's, on
// the same seeds) ≥ TargetSpeedup with no evaluation episode failed
// (failed episodes are counted at every evaluation, never dropped: means
// over the surviving episodes alone do not reach the targets).
func MeasureTimeToTarget(ctx context.Context, path string, to TargetOptions) (r TargetResult, err error) {
	r = TargetResult{Agentfile: path, TargetConsistency: TargetConsistency, TargetSpeedup: TargetSpeedup,
		EvalEvery: max(1, to.EvalEvery), EvalEpisodes: to.EvalEpisodes, Load1: load1()}
	began := time.Now()
	var evalTime time.Duration
	defer func() {
		r.TotalWallS = time.Since(began).Seconds()
		r.EvalWallS = evalTime.Seconds()
		r.TrainWallS = r.TotalWallS - r.EvalWallS
	}()
	cfg, err := agentfile.Load(path)
	if err != nil {
		return r, err
	}
	built, err := cfg.Build(ctx)
	if err != nil {
		return r, err
	}
	defer built.Close()
	s := built.Setup
	s.Logger = quietLogger()
	tr, err := trainer.New(s, built.Train)
	if err != nil {
		return r, err
	}
	defer tr.Close()
	r.Workers = s.Rollout.NumWorkers()
	r.EvalSeed = built.Eval.Seed
	r.MaxIterations = built.Train.Iterations
	if to.MaxIterations > 0 {
		r.MaxIterations = to.MaxIterations
	}
	eval := func(policies []string, episodes int) (rollout.EvalReport, error) {
		t0 := time.Now()
		defer func() { evalTime += time.Since(t0) }()
		e := built.Eval
		e.Episodes, e.Policies = episodes, policies
		return rollout.Evaluate(ctx, s, tr.Policy(), e)
	}
	refName := tr.Spec().ReferenceBaseline
	if refName == "" {
		return r, fmt.Errorf("env %s names no reference baseline to measure the speedup against", tr.Spec().Name)
	}
	ref, err := eval([]string{refName}, r.EvalEpisodes)
	if err != nil {
		return r, fmt.Errorf("evaluating %s: %w", refName, err)
	}
	refMakespan := ref.Policies[refName].MakespanS
	r.ReferenceFailedEpisodes = ref.Policies[refName].FailedEpisodes
	if refMakespan <= 0 {
		return r, fmt.Errorf("the reference baseline %s has no makespan", refName)
	}
	// Evaluate the initial policy too: iteration 0 says whether training
	// was needed at all.
	for {
		it := tr.Iteration()
		if it == 0 || it%r.EvalEvery == 0 || it == r.MaxIterations {
			rep, err := eval([]string{"grpo"}, r.EvalEpisodes)
			if err != nil {
				return r, err
			}
			g := rep.Policies["grpo"]
			p := TargetPoint{Iteration: it, TrainWallS: time.Since(began).Seconds() - evalTime.Seconds(),
				Consistency: g.Metrics["consistency"], Episodes: r.EvalEpisodes, FailedEpisodes: g.FailedEpisodes}
			if g.MakespanS > 0 {
				p.Speedup = refMakespan / g.MakespanS
			}
			r.History = append(r.History, p)
			r.Iterations, r.Consistency, r.Speedup, r.FailedEpisodes = it, p.Consistency, p.Speedup, p.FailedEpisodes
			if to.Progress != nil {
				to.Progress(p)
			}
			if p.meets() {
				r.Reached = true
				break
			}
			if p.FailedEpisodes > 0 && p.Consistency >= TargetConsistency && p.Speedup >= TargetSpeedup {
				r.NotReachedForFailures = true
			}
		}
		if it >= r.MaxIterations {
			break
		}
		if _, _, err := tr.Step(ctx); err != nil {
			return r, err
		}
	}
	if to.Confirm && built.Eval.Episodes > 0 {
		rep, err := eval([]string{"grpo", refName}, built.Eval.Episodes)
		if err != nil {
			return r, fmt.Errorf("confirming: %w", err)
		}
		g := rep.Policies["grpo"]
		r.Confirm = &TargetPoint{Iteration: r.Iterations, Consistency: g.Metrics["consistency"], Speedup: g.Speedup, Episodes: built.Eval.Episodes, FailedEpisodes: g.FailedEpisodes}
	}
	return r, nil
}

func runTarget(ctx context.Context, o *Options, path string) (TargetResult, error) {
	timeout := o.TargetTimeout
	if timeout <= 0 {
		timeout = 15 * time.Minute
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	r, err := MeasureTimeToTarget(tctx, path, TargetOptions{
		EvalEvery: 1, EvalEpisodes: 50, Confirm: true,
		Progress: func(p TargetPoint) {
			o.logf("time to target: iteration %d, %.0f s training: consistency %.4f, speedup %.2f, %d of %d episodes failed", p.Iteration, p.TrainWallS, p.Consistency, p.Speedup, p.FailedEpisodes, p.Episodes)
		},
	})
	r.Agentfile = path
	if err != nil && ctx.Err() == nil && tctx.Err() != nil {
		// The suite's own time limit: report how far it got.
		return r, nil
	}
	if r.Confirm != nil {
		o.logf("time to target: confirmed on %d eval seeds: consistency %.4f, speedup %.2f, %d failed", r.Confirm.Episodes, r.Confirm.Consistency, r.Confirm.Speedup, r.Confirm.FailedEpisodes)
	}
	return r, err
}
