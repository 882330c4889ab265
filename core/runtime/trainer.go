package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/grpo"
	"github.com/troupe-dev/troupe/core/policy"
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
	Decisions         int                `json:"decisions"`
	EnvSteps          int64              `json:"env_steps"`
	Backend           string             `json:"backend"`
	// Timing fields: the only ones that differ between identical runs.
	StepsPerSec float64 `json:"steps_per_sec"`
	WallS       float64 `json:"wall_s"`
}

// ErrInterrupted is returned by Run when its context is cancelled; the
// last completed iteration has been checkpointed.
var ErrInterrupted = errors.New("training interrupted")

// Trainer trains a team's policy with GRPO.
type Trainer struct {
	setup    Setup
	spec     core.EnvSpec
	pool     *pool
	pol      *policy.Policy
	opt      *grpo.Optimizer
	iter     int
	envSteps int64
	start    time.Time
	backend  string
}

// NewTrainer opens the workers and a fresh policy.
func NewTrainer(s Setup) (*Trainer, error) {
	probe, err := s.Env.Open()
	if err != nil {
		return nil, fmt.Errorf("opening env: %w", err)
	}
	spec := probe.Spec()
	_ = probe.Close()
	if err := s.validate(spec); err != nil {
		return nil, err
	}
	if err := s.Train.validate(); err != nil {
		return nil, err
	}
	if s.Train.Workers < 1 {
		s.Train.Workers = 1
	}
	pol, err := policy.New(policy.Config{
		ObsSize: spec.ObsSize, NumDecisions: len(spec.Decisions), NumAgents: spec.NumAgents(),
		Hidden: s.Train.Hidden, Shared: s.Train.SharePolicy, Seed: mix(s.Seed, 0x706f6c),
	})
	if err != nil {
		return nil, err
	}
	opt, err := grpo.NewOptimizer(pol, s.Train.Optimizer)
	if err != nil {
		return nil, err
	}
	p, err := newPool(&s, s.Train.Workers)
	if err != nil {
		return nil, err
	}
	t := &Trainer{setup: s, spec: spec, pool: p, pol: pol, opt: opt, start: time.Now()}
	t.backend = t.backendLabel()
	return t, nil
}

func (t *Trainer) backendLabel() string {
	text := false
	for _, d := range t.spec.Decisions {
		text = text || d.NeedsText
	}
	if !text {
		return "none"
	}
	seen := map[string]bool{}
	var names []string
	for i := 0; i < t.spec.NumAgents(); i++ {
		n := t.setup.agentLLM(i).BackendName()
		if !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	sort.Strings(names)
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "+"
		}
		out += n
	}
	return out
}

// Backend names the LLM backend(s) behind the team's text ("sim" for the
// simulated LLM, "none" when no decision needs text).
func (t *Trainer) Backend() string { return t.backend }

// Spec returns the env's spec.
func (t *Trainer) Spec() core.EnvSpec { return t.spec }

// Policy returns the policy being trained (shared, not a copy).
func (t *Trainer) Policy() *policy.Policy { return t.pol }

// Iteration returns the number of completed iterations.
func (t *Trainer) Iteration() int { return t.iter }

// Close ends the workers.
func (t *Trainer) Close() { t.pool.close() }

// Step runs one GRPO iteration: T tasks × G rollouts, scoring, advantages
// and the policy update. It returns the iteration's statistics.
func (t *Trainer) Step(ctx context.Context) (IterationStats, []EpisodeResult, error) {
	began := time.Now()
	tr := t.setup.Train
	T, G := tr.TasksPerIteration, tr.GroupSize
	jobs := make([]job, 0, T*G)
	for task := 0; task < T; task++ {
		ts := TrainTaskSeed(t.setup.Seed, t.iter, task)
		for g := 0; g < G; g++ {
			jobs = append(jobs, job{idx: len(jobs), task: ts, rollout: rolloutSeed(ts, g)})
		}
	}
	results, err := t.pool.play(ctx, jobs, newActorFor("grpo", policyActor{p: t.pol}), true)
	if err != nil {
		return IterationStats{}, nil, err
	}
	st := IterationStats{Iteration: t.iter + 1, Episodes: len(results), Backend: t.backend}
	for _, r := range results {
		if r.Failed {
			st.FailedEpisodes++
			continue
		}
		st.EnvSteps += int64(r.Episode.Steps)
	}
	if st.FailedEpisodes > 0 {
		t.setup.logger().Warn("failed episodes", "iteration", st.Iteration, "failed", st.FailedEpisodes, "of", len(results), "reasons", failureSummary(results))
	}
	if ratio := float64(st.FailedEpisodes) / float64(len(results)); ratio > tr.MaxFailureRatio {
		return st, results, fmt.Errorf("iteration %d: %d of %d episodes failed (%.0f%% > max_failure_ratio %.0f%%): %s",
			st.Iteration, st.FailedEpisodes, len(results), 100*ratio, 100*tr.MaxFailureRatio, failureSummary(results))
	}
	adv, zeroStd, err := t.advantages(results, T, G)
	if err != nil {
		return st, results, err
	}
	st.FracZeroStdGroups = float64(zeroStd) / float64(T)
	var batch []grpo.Decision
	for k := range results {
		r := &results[k]
		if r.Failed {
			continue
		}
		r.Advantages = adv[k]
		for _, d := range r.Decisions {
			batch = append(batch, grpo.Decision{Agent: d.Agent, Obs: d.Features, Mask: d.Mask, Action: d.Action, LogpOld: d.Logp, Advantage: adv[k][d.Agent]})
		}
	}
	st.Decisions = len(batch)
	if len(batch) > 0 {
		rng := rand.New(rand.NewPCG(mix(t.setup.Seed, 0x757064), uint64(t.iter)))
		us, err := t.opt.Update(batch, rng)
		if err != nil {
			return st, results, fmt.Errorf("iteration %d: update: %w", st.Iteration, err)
		}
		st.KL, st.ClipFrac, st.Entropy, st.GradNorm, st.Loss = us.KL, us.ClipFrac, us.Entropy, us.GradNorm, us.Loss
	}
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

// advantages returns, per result, one advantage per agent. With joint
// credit every agent gets its rollout's joint-reward advantage; with
// independent credit each agent's return is normalized within its group.
func (t *Trainer) advantages(results []EpisodeResult, T, G int) ([][]float64, int, error) {
	n := t.spec.NumAgents()
	adv := make([][]float64, len(results))
	for k := range adv {
		adv[k] = make([]float64, n)
	}
	tr := t.setup.Train
	zeroStd := 0
	if tr.Credit == "joint" {
		groups, idx, empty := groupRewards(results, T, G, func(r EpisodeResult) float64 { return r.Reward })
		a, z, err := grpo.GroupAdvantages(groups, tr.Baseline, tr.Scale)
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
		groups, idx, empty := groupRewards(results, T, G, func(r EpisodeResult) float64 { return r.Episode.AgentReturns[i] })
		a, z, err := grpo.GroupAdvantages(groups, tr.Baseline, tr.Scale)
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
func groupRewards(results []EpisodeResult, T, G int, f func(EpisodeResult) float64) (groups [][]float64, idx [][]int, empty int) {
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

func fillMeans(st *IterationStats, results []EpisodeResult) {
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
			st.Metrics[k] += v
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
	// Config is written to Out/config.toml when not nil (the resolved
	// configuration, secrets removed).
	Config []byte
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
	if o.Config != nil {
		if err := atomicfile.WriteFile(filepath.Join(o.Out, "config.toml"), o.Config, 0o644); err != nil {
			return err
		}
	}
	if o.Resume {
		if err := t.loadCheckpoint(o.Out); err != nil {
			return err
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
	saved := t.iter
	for t.iter < t.setup.Train.Iterations {
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
			if saved != t.iter {
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
		if t.iter%t.setup.Train.CheckpointEvery == 0 || t.iter == t.setup.Train.Iterations {
			if err := t.saveCheckpoint(o.Out); err != nil {
				return err
			}
			saved = t.iter
		}
	}
	return t.pol.Save(filepath.Join(o.Out, "policy.safetensors"))
}
