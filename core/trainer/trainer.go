package trainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/telemetry"
	"github.com/troupe-dev/troupe/internal/atomicfile"
)

// IterationStats is one line of metrics.jsonl.
type IterationStats struct {
	Iteration         int                `json:"iteration"`
	RewardMean        float64            `json:"reward_mean"`
	RewardStd         float64            `json:"reward_std"`
	Components        map[string]float64 `json:"components"`
	Metrics           map[string]float64 `json:"metrics"`
	KL                float64            `json:"kl"`
	ClipFrac          float64            `json:"clip_frac"`
	Entropy           float64            `json:"entropy"`
	GradNorm          float64            `json:"grad_norm"`
	Loss              float64            `json:"loss"`
	FracZeroStdGroups float64            `json:"frac_zero_std_groups"`
	Episodes          int                `json:"episodes"`
	FailedEpisodes    int                `json:"failed_episodes"`
	// BranchEpisodes and FailedBranches count the episodes replayed for
	// counterfactual credit (their env steps are in EnvSteps); omitted
	// when 0.
	BranchEpisodes int `json:"branch_episodes,omitempty"`
	FailedBranches int `json:"failed_branches,omitempty"`
	// ValueLoss is, with credit = "value", the critic's regression loss
	// ½·mean (V − target)² on the iteration's targets before its update;
	// omitted when 0.
	ValueLoss float64 `json:"value_loss,omitempty"`
	// Imitation is, in the first iteration of a run with train.imitate,
	// the warm start's account (see [Config.Imitate]); nil otherwise.
	Imitation *ImitationStats `json:"imitation,omitempty"`
	Decisions int             `json:"decisions"`
	EnvSteps  int64           `json:"env_steps"`
	Backend   string          `json:"backend"`
	// LLMTraffic totals the iteration's LLM traffic (requests, retries,
	// 429s, 5xx, timeouts, seconds waiting) over all its episodes, failed
	// ones included: the sum of rollout.EpisodeResult.Traffic. Zero for
	// the simulated LLM; an endpoint's differs between runs, as its texts
	// do.
	LLMTraffic core.Traffic `json:"llm_traffic"`
	// Timing fields: the only ones that differ between identical runs.
	StepsPerSec float64 `json:"steps_per_sec"`
	WallS       float64 `json:"wall_s"`
}

// ErrInterrupted is returned by Run when its context is cancelled; the
// last completed iteration has been checkpointed (iteration 0, the
// initial policy, if none had completed).
var ErrInterrupted = errors.New("training interrupted")

// Trainer trains a team's policy with GRPO. It is not safe for
// concurrent use.
type Trainer struct {
	setup    rollout.Setup
	cfg      Config
	spec     core.EnvSpec
	pool     Sampler
	pol      *policy.Policy
	opt      *grpo.Optimizer
	critic   *critic // credit = "value" only
	iter     int
	envSteps int64
	start    time.Time
	backend  string
}

// Sampler plays the episodes of a training iteration: the in-process
// [rollout.Pool] (what [New] uses), or rollout workers elsewhere (see
// [NewWithSampler]). Both must return the results in job order, scored,
// and the same results for the same jobs and policy.
type Sampler interface {
	// Sample plays the jobs of iteration it (1-based) as
	// [rollout.Pool.Sample] does.
	Sample(ctx context.Context, it int, jobs []rollout.Job, pol *policy.Policy) ([]rollout.EpisodeResult, error)
	// Replay plays the branch jobs of iteration it as
	// [rollout.Pool.Replay] does.
	Replay(ctx context.Context, it int, jobs []rollout.Job, pol *policy.Policy) ([]rollout.EpisodeResult, error)
	// Close releases what the sampler holds.
	Close()
}

// poolSampler is the in-process [rollout.Pool] as a [Sampler].
type poolSampler struct{ p *rollout.Pool }

func (s poolSampler) Sample(ctx context.Context, _ int, jobs []rollout.Job, pol *policy.Policy) ([]rollout.EpisodeResult, error) {
	return s.p.Sample(ctx, jobs, pol)
}

func (s poolSampler) Replay(ctx context.Context, _ int, jobs []rollout.Job, pol *policy.Policy) ([]rollout.EpisodeResult, error) {
	return s.p.Replay(ctx, jobs, pol)
}

func (s poolSampler) Close() { s.p.Close() }

// New opens the rollout workers and a fresh policy for the env of s.
func New(s rollout.Setup, cfg Config) (*Trainer, error) {
	return NewWithSampler(s, cfg, nil)
}

// NewWithSampler is [New] with the iteration's episodes played by sampler
// instead of an in-process [rollout.Pool] (nil: the pool). The trainer
// closes sampler on Close, and on error.
func NewWithSampler(s rollout.Setup, cfg Config, sampler Sampler) (_ *Trainer, err error) {
	defer func() {
		if err != nil && sampler != nil {
			sampler.Close()
		}
	}()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("setup: %w", err.(*core.SettingError).In("train"))
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	spec := s.Env.Spec()
	if cfg.Credit == CreditIndependent && !spec.StepRewards {
		return nil, fmt.Errorf("setup: credit = \"independent\" needs per-agent rewards, and env %q gives none", spec.Name)
	}
	// A branch replays an episode from its task seed and decisions, so the
	// text behind them must come back the same: the simulated LLM writes
	// it again with the same per-call seeds; with "replay" and "none" no
	// decision needs text (a replay env's recorded completions are part of
	// the env, which replays by contract); a real LLM's replies are not
	// recorded for replay.
	if b := s.Backend(spec); cfg.Credit == CreditCounterfactual && b != "sim" && b != "none" && b != "replay" {
		return nil, fmt.Errorf("setup: credit = \"counterfactual\" replays episodes, which needs the simulated LLM or an env that replays recorded completions itself (the team uses %s, whose replies are not replayed)", b)
	}
	if cfg.Imitate != "" && !slices.Contains(spec.Baselines, cfg.Imitate) && cfg.Imitate != "random" {
		return nil, fmt.Errorf("setup: %w", core.NewSettingError("imitate", "env %q offers no baseline %q (it offers %s)", spec.Name, cfg.Imitate, strings.Join(spec.Baselines, ", ")).In("train"))
	}
	if cfg.Credit == CreditValue && spec.StateSize <= 0 {
		return nil, fmt.Errorf("setup: credit = \"value\" trains a critic over the env's global state (core.Env.State), and env %q declares none (its spec's StateSize is %d); use credit = \"joint\" or \"counterfactual\"", spec.Name, spec.StateSize)
	}
	var crit *critic
	if cfg.Credit == CreditValue {
		if crit, err = newCritic(spec, cfg.ValueHidden, cfg.ValueLearningRate, rollout.DeriveSeed(s.Seed, 0x637269746963)); err != nil { // "critic"
			return nil, fmt.Errorf("setup: %w", err)
		}
	}
	pol, err := policy.New(policy.Config{
		ObsSize: spec.ObsSize, NumDecisions: len(spec.Decisions), NumAgents: spec.NumAgents(),
		Hidden: cfg.Hidden, Shared: cfg.SharePolicy, Seed: rollout.DeriveSeed(s.Seed, 0x706f6c),
	})
	if err != nil {
		return nil, err
	}
	opt, err := grpo.NewOptimizer(pol, cfg.Config)
	if err != nil {
		return nil, err
	}
	if sampler == nil {
		p, err := rollout.NewPool(&s)
		if err != nil {
			return nil, err
		}
		sampler = poolSampler{p}
	}
	return &Trainer{setup: s, cfg: cfg, spec: spec, pool: sampler, pol: pol, opt: opt, critic: crit, start: time.Now(), backend: s.Backend(spec)}, nil
}

// Backend names the LLM backend(s) behind the team's text ("sim" for the
// simulated LLM, "none" when no decision needs text).
func (t *Trainer) Backend() string { return t.backend }

// Config returns the settings in force: those given to New, with the
// optimizer's and the policy's read back from the optimizer and the policy
// themselves.
func (t *Trainer) Config() Config {
	c := t.cfg
	c.Config = t.opt.Config()
	pc := t.pol.Config()
	c.Hidden, c.SharePolicy = slices.Clone(pc.Hidden), pc.Shared
	return c
}

// Spec returns the env's spec.
func (t *Trainer) Spec() core.EnvSpec { return t.spec }

// Policy returns the policy being trained (shared, not a copy).
func (t *Trainer) Policy() *policy.Policy { return t.pol }

// Iteration returns the number of completed iterations.
func (t *Trainer) Iteration() int { return t.iter }

// Close ends the workers; the trainer cannot step after it. Closing again
// does nothing, so a caller may close the workers early (to free their envs
// before an evaluation) and still defer Close.
func (t *Trainer) Close() {
	if t.pool != nil {
		t.pool.Close()
		t.pool = nil
	}
}

// Step runs one GRPO iteration and returns its statistics and episodes
// (the first iteration of a run with train.imitate starts with the warm
// start, imitate.go):
//
//  1. rollouts: G joint rollouts of each of T task seeds with the current
//     policy, every agent sampling from its own observation;
//  2. score: each rollout's joint reward R = Σ_k w_k·c_k;
//  3. advantages: group-relative, A = (R − baseline) / scale, credited to
//     each agent's decisions (credit joint), or per agent on its own return
//     (independent), or per decision from counterfactual branches of the
//     episode (counterfactual, see credit.go), or per decision by GAE over
//     a learned critic of the global state (value, see value.go);
//  4. update: the clipped-surrogate loss over every credited decision,
//     Epochs passes of Minibatches Adam steps ([grpo.Optimizer.Update]);
//  5. stats: one line of metrics.jsonl.
func (t *Trainer) Step(ctx context.Context) (IterationStats, []rollout.EpisodeResult, error) {
	ctx, span := t.setup.Telemetry.StartIteration(ctx, t.iter+1)
	// The warm start changes the policy before the first iteration's
	// rollouts; if that iteration does not complete (Ctrl-C, a failure),
	// the policy and optimizer go back to the start, so the iteration-0
	// checkpoint holds the initial policy and a resume imitates again
	// from it, as the uninterrupted run did.
	var start *policy.Policy
	startOpt := t.opt
	if t.iter == 0 && t.cfg.Imitate != "" {
		start = t.pol.Clone()
	}
	st, results, err := t.step(ctx)
	if err != nil && start != nil {
		if cerr := t.pol.CopyFrom(start); cerr != nil {
			err = errors.Join(err, cerr)
		}
		t.opt = startOpt
	}
	if err == nil {
		span.Iteration(ctx, telemetry.Figures{RewardMean: st.RewardMean, Components: st.Components, KL: st.KL,
			ClipFraction: st.ClipFrac, Entropy: st.Entropy, GradNorm: st.GradNorm, Episodes: st.Episodes,
			FailedEpisodes: st.FailedEpisodes, EnvStepsPerSecond: st.StepsPerSec})
	}
	span.End(err)
	return st, results, err
}

// step is Step inside the iteration's span (see [telemetry]).
func (t *Trainer) step(ctx context.Context) (IterationStats, []rollout.EpisodeResult, error) {
	if t.pool == nil {
		return IterationStats{}, nil, errors.New("trainer: Step after Close")
	}
	began := time.Now()
	T, G := t.cfg.TasksPerIteration, t.cfg.GroupSize

	// 0. Warm start (train.imitate, first iteration of a fresh run): the
	// policy learns the baseline's decisions, then the optimizer starts
	// afresh from it, so that it is the KL term's reference.
	var imitation *ImitationStats
	if t.iter == 0 && t.cfg.Imitate != "" {
		p, err := rollout.NewPool(&t.setup)
		if err != nil {
			return IterationStats{}, nil, err
		}
		is, err := imitate(ctx, p, t.setup.Seed, t.cfg, t.pol)
		p.Close()
		if err != nil {
			return IterationStats{}, nil, err
		}
		if t.opt, err = grpo.NewOptimizer(t.pol, t.cfg.Config); err != nil {
			return IterationStats{}, nil, err
		}
		t.logger().Info("imitation", "baseline", is.Baseline, "episodes", is.Episodes, "failed", is.FailedEpisodes,
			"decisions", is.Decisions, "loss_before", is.LossBefore, "loss_after", is.LossAfter, "agreement", is.Agreement)
		if msg := is.partialFit(); msg != "" {
			t.logger().Warn(msg, "baseline", is.Baseline, "agreement", is.Agreement)
		}
		imitation = &is
	}

	// 1. Rollouts. Task seeds derive from the master seed and the
	// iteration, rollout seeds from the task seed and the group member, so
	// the results do not depend on the number of workers.
	jobs := make([]rollout.Job, 0, T*G)
	for task := 0; task < T; task++ {
		ts := rollout.TrainTaskSeed(t.setup.Seed, t.iter, task)
		for g := 0; g < G; g++ {
			jobs = append(jobs, rollout.Job{Task: ts, Rollout: rollout.RolloutSeed(ts, g)})
		}
	}
	results, err := t.pool.Sample(ctx, t.iter+1, jobs, t.pol)
	if err != nil {
		return IterationStats{}, nil, err
	}

	// 2. Score. The pool scored every episode with the reward functions.
	// A failed episode is counted and left out of its group; past
	// MaxFailureRatio the run stops.
	st := IterationStats{Iteration: t.iter + 1, Episodes: len(results), Backend: t.backend, Imitation: imitation}
	for _, r := range results {
		st.LLMTraffic = st.LLMTraffic.Add(r.Traffic)
		if r.Failed {
			st.FailedEpisodes++
			continue
		}
		st.EnvSteps += int64(r.Episode.Steps)
	}
	if st.FailedEpisodes > 0 {
		t.logger().Warn("failed episodes", "iteration", st.Iteration, "failed", st.FailedEpisodes, "of", len(results), "reasons", rollout.FailureSummary(results))
	}
	if ratio := float64(st.FailedEpisodes) / float64(len(results)); ratio > t.cfg.MaxFailureRatio {
		return st, results, fmt.Errorf("iteration %d: %d of %d episodes failed (%.0f%% > max_failure_ratio %.0f%%): %s",
			st.Iteration, st.FailedEpisodes, len(results), 100*ratio, 100*t.cfg.MaxFailureRatio, rollout.FailureSummary(results))
	}

	// 3. Advantages, one per credited decision (credit.go).
	cr, err := t.credit(ctx, jobs, results, T, G)
	st.BranchEpisodes, st.FailedBranches, st.ValueLoss = cr.branches, cr.failedBranches, cr.valueLoss
	if err != nil {
		return st, results, fmt.Errorf("iteration %d: %w", st.Iteration, err)
	}
	st.EnvSteps += cr.branchSteps
	if cr.groups > 0 {
		st.FracZeroStdGroups = float64(cr.zeroStd) / float64(cr.groups)
	}

	// 4. Update. Every credited decision (recorded decisions have more
	// than one legal choice) is one row of the batch, with its advantage.
	var batch []grpo.Decision
	for k := range results {
		r := &results[k]
		if r.Failed {
			continue
		}
		r.Advantages = cr.agent[k]
		for j, d := range r.Decisions {
			if cr.credited[k][j] {
				batch = append(batch, grpo.Decision{Agent: d.Agent, Obs: d.Features, Mask: d.Mask, Action: d.Action, LogpOld: d.Logp, Advantage: cr.decision[k][j]})
			}
		}
	}
	st.Decisions = len(batch)
	if len(batch) > 0 {
		rng := rand.New(rand.NewPCG(rollout.DeriveSeed(t.setup.Seed, 0x757064), uint64(t.iter)))
		us, err := t.opt.Update(batch, rng)
		if err != nil {
			return st, results, fmt.Errorf("iteration %d: update: %w", st.Iteration, err)
		}
		st.KL, st.ClipFrac, st.Entropy, st.GradNorm, st.Loss = us.KL, us.ClipFrac, us.Entropy, us.GradNorm, us.Loss
	}

	// 5. Stats.
	fillMeans(&st, results)
	t.iter++
	iterSteps := st.EnvSteps
	t.envSteps += iterSteps
	st.EnvSteps = t.envSteps
	if el := time.Since(began).Seconds(); el > 0 {
		st.StepsPerSec = float64(iterSteps) / el
	}
	st.WallS = time.Since(t.start).Seconds()
	return st, results, nil
}

func (t *Trainer) logger() *slog.Logger {
	if t.setup.Logger != nil {
		return t.setup.Logger
	}
	return slog.Default()
}

func fillMeans(st *IterationStats, results []rollout.EpisodeResult) {
	st.Components, st.Metrics = map[string]float64{}, map[string]float64{}
	var rewards []float64
	for _, r := range results {
		if r.Failed {
			continue
		}
		rewards = append(rewards, r.Reward)
		for k, v := range r.Components {
			st.Components[k] += v
		}
		for k, v := range r.Metrics {
			if k != core.MetricTask { // a label, not a measure
				st.Metrics[k] += v
			}
		}
	}
	if len(rewards) == 0 {
		return
	}
	n := float64(len(rewards))
	for k := range st.Components {
		st.Components[k] /= n
	}
	for k := range st.Metrics {
		st.Metrics[k] /= n
	}
	st.RewardMean, st.RewardStd = meanStd(rewards)
}

// nonFinite names the mean components and metrics of st that JSON cannot
// hold (NaN or ±Inf, reported so by an env or a reward function).
func nonFinite(st IterationStats) string {
	var bad []string
	for _, part := range []struct {
		name string
		m    map[string]float64
	}{{"components", st.Components}, {"metrics", st.Metrics}} {
		for k, v := range part.m {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad = append(bad, fmt.Sprintf("%s.%s = %v", part.name, k, v))
			}
		}
	}
	if len(bad) == 0 {
		return "a statistic is not finite"
	}
	sort.Strings(bad)
	return strings.Join(bad, ", ")
}

func meanStd(xs []float64) (float64, float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	m := 0.0
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	v := 0.0
	for _, x := range xs {
		v += (x - m) * (x - m)
	}
	return m, math.Sqrt(v / float64(len(xs)))
}

// RunOptions says where Run writes and how it reports.
type RunOptions struct {
	// Out is the run directory. It is created if missing.
	Out string
	// Resume continues from Out/checkpoint.
	Resume bool
	// Config is the resolved configuration, secrets removed. A fresh run
	// writes it to Out/config.toml when not nil. A resumed run never
	// touches config.toml (it describes the run's first iterations); if
	// Changes is not empty it writes Config, when not nil, to
	// Out/ConfigAfterFile(N), N being the checkpoint's iteration.
	Config []byte
	// Changes, on a resumed run, are the settings that differ from the
	// run's CurrentConfig; they are appended to Out/changes.jsonl with the
	// iteration they apply after.
	Changes []ConfigChange
	// Progress, if set, is called after every iteration.
	Progress func(IterationStats)
}

// Run trains for the configured iterations, writing the run directory:
// config.toml, metrics.jsonl, checkpoint/ every CheckpointEvery iterations
// and on interruption, and policy.safetensors at the end. On cancellation
// it checkpoints the last completed iteration and returns ErrInterrupted.
func (t *Trainer) Run(ctx context.Context, o RunOptions) error {
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return err
	}
	if o.Config != nil && !o.Resume {
		if err := atomicfile.WriteFile(filepath.Join(o.Out, "config.toml"), o.Config, 0o644); err != nil {
			return err
		}
	}
	if o.Resume {
		if err := t.loadCheckpoint(o.Out); err != nil {
			return err
		}
		if len(o.Changes) > 0 {
			if o.Config != nil {
				if err := atomicfile.WriteFile(filepath.Join(o.Out, ConfigAfterFile(t.iter)), o.Config, 0o644); err != nil {
					return err
				}
			}
			c := ConfigChanges{AfterIteration: t.iter, Time: time.Now().UTC().Format(time.RFC3339), Changes: o.Changes}
			if err := appendChanges(o.Out, c); err != nil {
				return err
			}
		}
	} else {
		// A fresh run replaces what an earlier run left in Out.
		for _, name := range []string{"metrics.jsonl", LLMSamplesFile} {
			if err := os.Remove(filepath.Join(o.Out, name)); err != nil && !os.IsNotExist(err) {
				return err
			}
		}
	}
	mf, err := os.OpenFile(filepath.Join(o.Out, "metrics.jsonl"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer mf.Close()
	// saved is the iteration of the checkpoint on disk, -1 for none: an
	// interruption before the first iteration of a fresh run saves the
	// iteration-0 checkpoint, so that --resume always has one.
	saved := -1
	if o.Resume {
		saved = t.iter
	}
	for t.iter < t.cfg.Iterations {
		st, results, err := t.Step(ctx)
		if err != nil {
			if ctx.Err() != nil {
				if saved != t.iter {
					if cerr := t.saveCheckpoint(o.Out); cerr != nil {
						return errors.Join(ErrInterrupted, cerr)
					}
				}
				return ErrInterrupted
			}
			if saved != t.iter && t.iter > 0 {
				if cerr := t.saveCheckpoint(o.Out); cerr != nil {
					return errors.Join(err, cerr)
				}
			}
			return err
		}
		if err := t.appendLLMSamples(o.Out, st.Iteration, results); err != nil {
			return err
		}
		line, err := json.Marshal(st)
		if err != nil {
			return fmt.Errorf("iteration %d: writing metrics.jsonl: %s: %w", st.Iteration, nonFinite(st), err)
		}
		if _, err := mf.Write(append(line, '\n')); err != nil {
			return err
		}
		if err := mf.Sync(); err != nil {
			return err
		}
		if o.Progress != nil {
			o.Progress(st)
		}
		if t.iter%t.cfg.CheckpointEvery == 0 || t.iter == t.cfg.Iterations {
			if err := t.saveCheckpoint(o.Out); err != nil {
				return err
			}
			saved = t.iter
		}
	}
	return t.pol.Save(filepath.Join(o.Out, "policy.safetensors"))
}
