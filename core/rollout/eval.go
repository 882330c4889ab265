package rollout

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
	"github.com/troupe-dev/troupe/internal/stats"
)

// PolicyResult is one policy's row of an evaluation: means over the
// evaluation episodes that did not fail, each with its 95 % confidence
// interval in CI95. An episode the runtime cut short (step limit, token
// budget) is scored and counted in the means like any other; only failed
// episodes (a crash, a plugin fault, a reward function's error) are left
// out, and FailedEpisodes and FailedShare say how many.
type PolicyResult struct {
	Reward     float64            `json:"reward"`
	Components map[string]float64 `json:"components"`
	// Metrics holds the task's own measures (consistency, pass_rate,
	// return, each check …).
	Metrics   map[string]float64 `json:"metrics"`
	MakespanS float64            `json:"makespan_s"`
	// Speedup is the mean makespan of the env's reference baseline
	// (EvalReport.Reference) divided by this policy's, on the same seeds;
	// 0 when there is none: the env names no reference baseline, it was
	// not evaluated, or a makespan is 0 (WriteTable shows "–").
	Speedup        float64 `json:"speedup"`
	Tokens         float64 `json:"tokens"`
	LLMCalls       float64 `json:"llm_calls"`
	FailedEpisodes int     `json:"failed_episodes"`
	// FailedShare is FailedEpisodes over the episodes played.
	FailedShare float64 `json:"failed_share"`
	// TruncatedEpisodes counts the scored episodes the runtime cut short
	// (its step limit or a token budget).
	TruncatedEpisodes int `json:"truncated_episodes"`
	// LLMTraffic totals the policy's LLM traffic (requests, retries, 429s,
	// 5xx, timeouts, seconds waiting) over all its episodes, failed ones
	// included; zero for the simulated LLM. The per-episode means, over
	// the scored episodes with intervals, are in Metrics
	// (core.MetricLLMRequests …) when the team uses an endpoint.
	LLMTraffic core.Traffic `json:"llm_traffic"`
	// CI95 holds the 95 % interval of each mean above (nil when no episode
	// was scored).
	CI95 *PolicyCI `json:"ci95,omitempty"`
}

// PolicyCI holds the 95 % confidence intervals of a [PolicyResult]'s
// means: percentile bootstrap over the evaluation episodes
// (internal/stats: stats.Resamples resamples, fixed seed, so the same
// episodes give the same intervals), failed episodes left out. Speedup's
// is the interval of the ratio of the two mean makespans, the reference's
// and this policy's episodes resampled together by seed; it is absent
// when there is no speedup.
type PolicyCI struct {
	Reward     stats.Interval            `json:"reward"`
	Components map[string]stats.Interval `json:"components"`
	Metrics    map[string]stats.Interval `json:"metrics"`
	MakespanS  stats.Interval            `json:"makespan_s"`
	Speedup    *stats.Interval           `json:"speedup,omitempty"`
	Tokens     stats.Interval            `json:"tokens"`
	LLMCalls   stats.Interval            `json:"llm_calls"`
}

// Difference is a paired difference of means with its 95 % interval.
type Difference struct {
	Mean float64        `json:"mean"`
	CI95 stats.Interval `json:"ci95"`
}

// MarshalJSON writes null for a mean that is not a number (no pair).
func (d Difference) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mean *float64       `json:"mean"`
		CI95 stats.Interval `json:"ci95"`
	}{stats.NumberOrNull(d.Mean), d.CI95})
}

// PairedResult compares the trained policy with another on the same
// evaluation seeds: every figure is the mean over seeds of (trained −
// other) with the 95 % interval of a paired bootstrap (seeds resampled,
// so what the two policies share through the seed cancels out). A seed
// on which either policy's episode failed is left out of every figure
// and counted in Excluded. Speedup has no paired difference (it is
// itself a ratio to the reference); MakespanS's difference stands for it.
type PairedResult struct {
	// Pairs counts the seeds both policies scored; Excluded those where
	// either failed.
	Pairs      int                   `json:"pairs"`
	Excluded   int                   `json:"excluded"`
	Reward     Difference            `json:"reward"`
	Components map[string]Difference `json:"components"`
	Metrics    map[string]Difference `json:"metrics"`
	MakespanS  Difference            `json:"makespan_s"`
	Tokens     Difference            `json:"tokens"`
	LLMCalls   Difference            `json:"llm_calls"`
	// RewardByTask is Reward with its interval over task instances
	// instead of seeds: the seeds grouped by the instance they play
	// (core.MetricTask: the document, the class) and whole instances
	// resampled (stats.Bootstrap.PairedDiffByCluster). Its mean is
	// Reward's; its interval says whether the difference would hold on
	// other instances of the task, and is the wider one when the
	// difference depends on the instance. Nil when the env does not
	// report core.MetricTask.
	RewardByTask *TaskDifference `json:"reward_by_task,omitempty"`
	// ByTask is Reward instance by instance: for each value of
	// core.MetricTask the seeds played, in increasing order of the value,
	// the mean difference on them and its paired interval. Nil when the
	// env does not report core.MetricTask.
	ByTask []TaskPair `json:"by_task,omitempty"`
}

// TaskPair is a paired difference in joint reward on the seeds that
// played one task instance.
type TaskPair struct {
	// Task is the instance's core.MetricTask value, Name its name
	// (core.EnvSpec.TaskNames; empty when the env names none).
	Task int    `json:"task"`
	Name string `json:"name,omitempty"`
	// Pairs counts the seeds of this instance both policies scored;
	// Reward is the mean of (trained − other) over them with its 95 %
	// paired-bootstrap interval (undefined, null in JSON, below 2 pairs).
	Pairs  int        `json:"pairs"`
	Reward Difference `json:"reward"`
}

// TaskDifference is a paired difference whose interval resamples task
// instances: Tasks counts the instances the pairs played.
type TaskDifference struct {
	Difference
	Tasks int `json:"tasks"`
}

// MarshalJSON writes the difference's fields and tasks in one object.
func (d TaskDifference) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Mean  *float64       `json:"mean"`
		CI95  stats.Interval `json:"ci95"`
		Tasks int            `json:"tasks"`
	}{stats.NumberOrNull(d.Mean), d.CI95, d.Tasks})
}

// EvalReport is `troupe eval --json` and eval.json.
type EvalReport struct {
	Env      string `json:"env"`
	Episodes int    `json:"episodes"`
	Seed     uint64 `json:"seed"`
	// Sampled says the trained policy sampled its decisions instead of
	// taking the most likely one.
	Sampled bool `json:"sampled"`
	// Backend names the LLM backend(s) behind the results; "sim" means the
	// offline simulated LLM.
	Backend string `json:"backend"`
	// Baselines are the env's scripted policies in the spec's order (the
	// order of the table), and Reference the one speedups are measured
	// against (core.EnvSpec.ReferenceBaseline; empty for none).
	Baselines []string                `json:"baselines,omitempty"`
	Reference string                  `json:"reference,omitempty"`
	Policies  map[string]PolicyResult `json:"policies"`
	// BestBaseline is the evaluated policy other than the trained one
	// ("grpo") with the highest mean joint reward (random included; ties
	// go to the first in PolicyOrder); empty when there is none.
	BestBaseline string `json:"best_baseline,omitempty"`
	// OutsideTask names the baselines that do not play the task as posed
	// (core.EnvSpec.OutsideTask): reported, marked [OutsideMark], never
	// the best baseline.
	OutsideTask []string `json:"outside_task,omitempty"`
	// Paired holds, for every other evaluated policy, the trained policy's
	// paired difference to it on the same seeds (grpo − that policy);
	// absent when the trained policy was not evaluated.
	Paired map[string]PairedResult `json:"paired,omitempty"`
	// BestPaired holds, for every evaluated policy other than the trained
	// one and the best baseline, the best baseline's paired difference to
	// it on the same seeds (BestBaseline − that policy): whether the best
	// baseline is better than the next ones, or only level with them.
	BestPaired map[string]PairedResult `json:"best_baseline_paired,omitempty"`
}

// Evaluate plays every policy on the same held-out seeds: the trained
// policy as "grpo" (greedy unless e.Sampled; skipped when trained is nil),
// each baseline the env offers, and "random". Speedups are measured
// against the env's reference baseline (core.EnvSpec.ReferenceBaseline).
// Every mean comes with its 95 % bootstrap interval ([PolicyCI]); the best
// baseline is named, and the trained policy is compared with every other
// policy seed by seed ([PairedResult]). It is an error when every episode
// of a policy failed.
func Evaluate(ctx context.Context, s Setup, trained *policy.Policy, e Eval) (EvalReport, error) {
	names, err := evalPolicies(s, trained, e)
	if err != nil {
		return EvalReport{}, err
	}
	p, err := NewPool(&s)
	if err != nil {
		return EvalReport{}, err
	}
	defer p.Close()
	return evaluate(ctx, s, p, trained, e, names)
}

// Player plays evaluation episodes: the in-process [Pool], or the
// workers of a cluster (core/cluster's Client) that play them with the
// same setup.
type Player interface {
	// PlayEval plays the jobs with the policy called name (see
	// [Pool.PlayEval]) and returns the scored results in job order.
	PlayEval(ctx context.Context, jobs []Job, name string, trained *policy.Policy, sampled bool) ([]EpisodeResult, error)
}

// PlayEval plays the jobs with the policy called name: "grpo" (trained,
// greedy unless sampled), "random", or a baseline the env offers; no
// decision is recorded. This is what [Evaluate] plays each policy with.
func (p *Pool) PlayEval(ctx context.Context, jobs []Job, name string, trained *policy.Policy, sampled bool) ([]EpisodeResult, error) {
	var a actor
	if trained != nil {
		a = policyActor{p: trained, greedy: !sampled}
	}
	return p.play(ctx, jobs, newActorFor(name, a), false)
}

// Demonstrate plays the jobs with the env's baseline name (or "random")
// and records every decision as [Pool.Sample] does (their Logp is 0: a
// baseline has no probabilities). It is what imitation learns from.
func (p *Pool) Demonstrate(ctx context.Context, jobs []Job, name string) ([]EpisodeResult, error) {
	return p.play(ctx, jobs, newActorFor(name, nil), true)
}

// EvaluateOn is [Evaluate] with the episodes played by pl, whose setup
// must be s's (it gives the same report as Evaluate when it plays as the
// in-process pool does).
func EvaluateOn(ctx context.Context, s Setup, pl Player, trained *policy.Policy, e Eval) (EvalReport, error) {
	names, err := evalPolicies(s, trained, e)
	if err != nil {
		return EvalReport{}, err
	}
	return evaluate(ctx, s, pl, trained, e, names)
}

// evalPolicies checks the evaluation's settings and returns the names of
// the policies it plays.
func evalPolicies(s Setup, trained *policy.Policy, e Eval) ([]string, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	spec := s.Env.Spec()
	if err := e.Validate(); err != nil {
		return nil, err.(*core.SettingError).In("eval")
	}
	if err := e.CheckPolicies(spec, trained != nil); err != nil {
		return nil, err.(*core.SettingError).In("eval")
	}
	names := e.Policies
	if len(names) == 0 {
		if trained != nil {
			names = append(names, "grpo")
		}
		names = append(names, spec.Baselines...)
		names = append(names, "random")
	}
	if trained != nil {
		if err := checkPolicyFits(trained, spec.ObsSize, len(spec.Decisions), spec.NumAgents()); err != nil {
			return nil, err
		}
	}
	return names, nil
}

func evaluate(ctx context.Context, s Setup, pl Player, trained *policy.Policy, e Eval, names []string) (EvalReport, error) {
	spec := s.Env.Spec()
	jobs := make([]Job, e.Episodes)
	for i := range jobs {
		ts := EvalTaskSeed(e.Seed, i)
		jobs[i] = Job{Task: ts, Rollout: RolloutSeed(ts, 0)}
	}
	rep := EvalReport{
		Env: spec.Name, Episodes: e.Episodes, Seed: e.Seed, Sampled: e.Sampled, Backend: s.Backend(spec),
		Baselines: spec.Baselines, Reference: spec.ReferenceBaseline, OutsideTask: spec.OutsideTask, Policies: map[string]PolicyResult{},
	}
	samples := map[string]*episodeFigures{}
	if e.Progress != nil {
		e.Progress("", 0, len(names))
	}
	for k, name := range names {
		results, err := pl.PlayEval(ctx, jobs, name, trained, e.Sampled)
		if err != nil {
			return rep, err
		}
		samples[name] = collectFigures(results)
		rep.Policies[name] = samples[name].summary()
		if r := rep.Policies[name]; r.FailedEpisodes == len(results) {
			return rep, fmt.Errorf("eval: every episode of policy %s failed: %s", name, FailureSummary(results))
		}
		if e.Progress != nil {
			e.Progress(name, k+1, len(names))
		}
	}
	if ref, ok := samples[rep.Reference]; ok {
		for name, r := range rep.Policies {
			if sp, iv := stats.RatioCI(ref.makespan, samples[name].makespan); sp > 0 {
				r.Speedup, r.CI95.Speedup = sp, &iv
				rep.Policies[name] = r
			}
		}
	}
	rep.BestBaseline = rep.bestBaseline()
	rep.Paired = pairedWith(samples, "grpo", spec.TaskNames)
	rep.BestPaired = pairedWith(samples, rep.BestBaseline, spec.TaskNames)
	return rep, nil
}

// pairedWith returns the paired difference of policy first to every
// other policy but the trained one ("grpo"), seed by seed; nil when first
// was not evaluated.
func pairedWith(samples map[string]*episodeFigures, first string, taskNames []string) map[string]PairedResult {
	a, ok := samples[first]
	if !ok {
		return nil
	}
	out := map[string]PairedResult{}
	for name, other := range samples {
		if name != first && name != "grpo" {
			out[name] = pairedFigures(a, other, taskNames)
		}
	}
	return out
}

func checkPolicyFits(p *policy.Policy, obs, decisions, agents int) error {
	c := p.Config()
	if c.ObsSize != obs || c.NumDecisions != decisions || c.NumAgents != agents {
		return fmt.Errorf("the policy was trained for obs %d, %d decisions, %d agents; this env has obs %d, %d decisions, %d agents",
			c.ObsSize, c.NumDecisions, c.NumAgents, obs, decisions, agents)
	}
	return nil
}

// episodeFigures holds one policy's figures per evaluation seed, in job
// order, NaN where the episode failed. A figure a scored episode did not
// report counts as 0 there, as it always has in the means.
type episodeFigures struct {
	episodes, failed, truncated int
	traffic                     core.Traffic
	reward, makespan, tokens    []float64
	calls                       []float64
	task                        []float64 // core.MetricTask, NaN where not reported
	components, metrics         map[string][]float64
}

func collectFigures(results []EpisodeResult) *episodeFigures {
	n := len(results)
	newColumn := func() []float64 {
		c := make([]float64, n)
		for i, x := range results {
			if x.Failed {
				c[i] = math.NaN()
			}
		}
		return c
	}
	column := func(m map[string][]float64, k string) []float64 {
		c, ok := m[k]
		if !ok {
			c = newColumn()
			m[k] = c
		}
		return c
	}
	f := &episodeFigures{episodes: n, components: map[string][]float64{}, metrics: map[string][]float64{},
		reward: newColumn(), makespan: newColumn(), tokens: newColumn(), calls: newColumn(), task: make([]float64, n)}
	for i := range f.task {
		f.task[i] = math.NaN()
	}
	for i, x := range results {
		f.traffic = f.traffic.Add(x.Traffic)
		if x.Failed {
			f.failed++
			continue
		}
		if x.Episode.Truncated {
			f.truncated++
		}
		f.reward[i] = x.Reward
		for k, v := range x.Components {
			column(f.components, k)[i] = v
		}
		for k, v := range x.Metrics {
			switch k {
			case core.MetricMakespan:
				f.makespan[i] = v
			case core.MetricTokens:
				f.tokens[i] = v
			case core.MetricLLMCalls:
				f.calls[i] = v
			case core.MetricTask:
				f.task[i] = v
			default:
				column(f.metrics, k)[i] = v
			}
		}
	}
	return f
}

// summary returns the means and their intervals.
func (f *episodeFigures) summary() PolicyResult {
	r := PolicyResult{Components: map[string]float64{}, Metrics: map[string]float64{}, FailedEpisodes: f.failed, TruncatedEpisodes: f.truncated, LLMTraffic: f.traffic}
	if f.episodes > 0 {
		r.FailedShare = float64(f.failed) / float64(f.episodes)
	}
	if f.failed == f.episodes {
		return r
	}
	ci := &PolicyCI{Components: map[string]stats.Interval{}, Metrics: map[string]stats.Interval{}}
	r.Reward, ci.Reward = stats.Mean(f.reward), stats.BootstrapCI(f.reward)
	r.MakespanS, ci.MakespanS = stats.Mean(f.makespan), stats.BootstrapCI(f.makespan)
	r.Tokens, ci.Tokens = stats.Mean(f.tokens), stats.BootstrapCI(f.tokens)
	r.LLMCalls, ci.LLMCalls = stats.Mean(f.calls), stats.BootstrapCI(f.calls)
	for k, c := range f.components {
		r.Components[k], ci.Components[k] = stats.Mean(c), stats.BootstrapCI(c)
	}
	for k, c := range f.metrics {
		r.Metrics[k], ci.Metrics[k] = stats.Mean(c), stats.BootstrapCI(c)
	}
	r.CI95 = ci
	return r
}

// pairedFigures returns a − b per figure on the same seeds (the figures
// both report); taskNames name a's task values.
func pairedFigures(a, b *episodeFigures, taskNames []string) PairedResult {
	diff := func(x, y []float64) Difference {
		d := stats.PairedDiffCI(x, y)
		return Difference{Mean: d.Mean, CI95: d.CI95}
	}
	both := func(x, y map[string][]float64) map[string]Difference {
		out := map[string]Difference{}
		for k, c := range x {
			if o, ok := y[k]; ok {
				out[k] = diff(c, o)
			}
		}
		return out
	}
	d := stats.PairedDiffCI(a.reward, b.reward)
	r := PairedResult{
		Pairs: d.Pairs, Excluded: d.Excluded, Reward: Difference{Mean: d.Mean, CI95: d.CI95},
		Components: both(a.components, b.components), Metrics: both(a.metrics, b.metrics),
		MakespanS: diff(a.makespan, b.makespan), Tokens: diff(a.tokens, b.tokens), LLMCalls: diff(a.calls, b.calls),
	}
	if t := stats.PairedDiffByClusterCI(a.reward, b.reward, a.task); t.Clusters > 0 {
		r.RewardByTask = &TaskDifference{Difference{Mean: t.Mean, CI95: t.CI95}, t.Clusters}
		r.ByTask = pairsByTask(a.reward, b.reward, a.task, taskNames)
	}
	return r
}

// pairsByTask returns the paired difference x − y on the seeds of each
// task value (NaN: none reported), in increasing order of the value.
func pairsByTask(x, y, task []float64, names []string) []TaskPair {
	seeds := map[int][]int{}
	for i, v := range task {
		if !math.IsNaN(v) {
			seeds[int(v)] = append(seeds[int(v)], i)
		}
	}
	var out []TaskPair
	for _, k := range slices.Sorted(maps.Keys(seeds)) {
		xs, ys := make([]float64, len(seeds[k])), make([]float64, len(seeds[k]))
		for j, i := range seeds[k] {
			xs[j], ys[j] = x[i], y[i]
		}
		d := stats.PairedDiffCI(xs, ys)
		if d.Pairs < 2 { // one seed: a resample can only repeat it, so no interval
			d.CI95 = stats.Interval{Lo: math.NaN(), Hi: math.NaN()}
		}
		p := TaskPair{Task: k, Pairs: d.Pairs, Reward: Difference{Mean: d.Mean, CI95: d.CI95}}
		if k >= 0 && k < len(names) {
			p.Name = names[k]
		}
		out = append(out, p)
	}
	return out
}

// bestBaseline returns the scored policy other than "grpo" and the
// baselines outside the task with the highest mean joint reward, the first
// in PolicyOrder on a tie.
func (r EvalReport) bestBaseline() string {
	best := ""
	for _, n := range r.PolicyOrder() {
		if p := r.Policies[n]; n == "grpo" || p.CI95 == nil || slices.Contains(r.OutsideTask, n) {
			continue
		}
		if best == "" || r.Policies[n].Reward > r.Policies[best].Reward {
			best = n
		}
	}
	return best
}

// CostColumns names the time-and-cost columns of an evaluation table, the
// cells of [PolicyResult.CostCells].
func CostColumns() []string {
	return []string{core.MetricMakespan, "speedup", core.MetricTokens, core.MetricLLMCalls, "failed", "truncated"}
}

// CostCells formats p's makespan, speedup ("–" when there is no reference
// baseline to measure against), tokens and LLM calls as table cells, each
// mean with the half-width of its 95 % interval (see [MeanCell]), the
// failed episodes with their share and the truncated (scored) episodes,
// in the order of [CostColumns].
func (p PolicyResult) CostCells() []string {
	ci := p.intervals()
	speedup := "–"
	if p.Speedup != 0 {
		iv := undefinedInterval
		if ci.Speedup != nil {
			iv = *ci.Speedup
		}
		speedup = MeanCell("%.2f", p.Speedup, iv)
	}
	return []string{MeanCell("%.1f", p.MakespanS, ci.MakespanS), speedup, MeanCell("%.0f", p.Tokens, ci.Tokens),
		MeanCell("%.1f", p.LLMCalls, ci.LLMCalls), fmt.Sprintf("%d (%.3g%%)", p.FailedEpisodes, 100*p.FailedShare), fmt.Sprintf("%d", p.TruncatedEpisodes)}
}

var undefinedInterval = stats.Interval{Lo: math.NaN(), Hi: math.NaN()}

// intervals returns p.CI95, or intervals all undefined when it is nil.
func (p PolicyResult) intervals() PolicyCI {
	if p.CI95 != nil {
		return *p.CI95
	}
	u := undefinedInterval
	return PolicyCI{Reward: u, MakespanS: u, Tokens: u, LLMCalls: u}
}

// lookup returns m[k], undefined when absent.
func lookup(m map[string]stats.Interval, k string) stats.Interval {
	if iv, ok := m[k]; ok {
		return iv
	}
	return undefinedInterval
}

// MeanCell formats a mean and the half-width of its 95 % interval with
// format ("0.7140 ±0.0123" for "%.4f"); the mean alone when the interval
// is undefined. The half-width is (hi − lo) / 2: a percentile interval
// need not be symmetric, and eval --json has its exact ends.
func MeanCell(format string, mean float64, iv stats.Interval) string {
	if !iv.Defined() {
		return fmt.Sprintf(format, mean)
	}
	return fmt.Sprintf(format+" ±"+format, mean, iv.HalfWidth())
}

// DiffCell formats a paired difference as its mean and interval with
// signs ("+0.0312 [+0.0101, +0.0520]" for "%.4f"); "–" when there was no
// pair.
func DiffCell(format string, d Difference) string {
	if math.IsNaN(d.Mean) {
		return "–"
	}
	f := strings.Replace(format, "%", "%+", 1)
	if !d.CI95.Defined() {
		return fmt.Sprintf(f, d.Mean)
	}
	return fmt.Sprintf(f+" ["+f+", "+f+"]", d.Mean, d.CI95.Lo, d.CI95.Hi)
}

// PolicyOrder returns the report's policy names: grpo first, then the
// env's baselines in the spec's order, then random, then the rest
// alphabetically.
func (r EvalReport) PolicyOrder() []string {
	rank := map[string]int{"grpo": 0}
	for _, b := range r.Baselines {
		if _, dup := rank[b]; !dup {
			rank[b] = len(rank)
		}
	}
	if _, dup := rank["random"]; !dup {
		rank["random"] = len(rank)
	}
	names := slices.Sorted(maps.Keys(r.Policies))
	sort.SliceStable(names, func(i, j int) bool {
		ri, oki := rank[names[i]]
		rj, okj := rank[names[j]]
		if !oki {
			ri = len(rank)
		}
		if !okj {
			rj = len(rank)
		}
		return ri < rj
	})
	return names
}

// qualityMetrics are shown in the CLI table when present.
var qualityMetrics = []string{core.MetricConsistency, core.MetricPassRate, core.MetricReturn}

// Columns returns the figure columns of the evaluation tables: every
// reward component any policy reports, by name, then those of metrics
// (in the given order) that some policy reports and that are not already
// a component.
func (r EvalReport) Columns(metrics []string) (comps, mets []string) {
	seen := map[string]bool{}
	for _, p := range r.Policies {
		for c := range p.Components {
			seen[c] = true
		}
	}
	comps = slices.Sorted(maps.Keys(seen))
	for _, m := range metrics {
		if seen[m] {
			continue
		}
		for _, p := range r.Policies {
			if _, ok := p.Metrics[m]; ok {
				mets = append(mets, m)
				break
			}
		}
	}
	return comps, mets
}

// BestMark follows the best baseline's name in the tables.
const BestMark = "*"

// OutsideMark follows the name of a baseline outside the task
// ([EvalReport.OutsideTask]) in the tables.
const OutsideMark = "†"

// Table returns the evaluation table, one row per policy in PolicyOrder:
// the joint reward, the components and metrics of [EvalReport.Columns],
// then the [CostColumns]. Each mean carries the half-width of its 95 %
// interval ([MeanCell]) and the best baseline's name is followed by
// [BestMark].
func (r EvalReport) Table(metrics []string) (head []string, rows [][]string) {
	comps, mets := r.Columns(metrics)
	head = append(append(append([]string{"policy", "reward"}, comps...), mets...), CostColumns()...)
	for _, n := range r.PolicyOrder() {
		p := r.Policies[n]
		ci := p.intervals()
		row := []string{r.markedName(n), MeanCell("%.4f", p.Reward, ci.Reward)}
		for _, c := range comps {
			row = append(row, MeanCell("%.4f", p.Components[c], lookup(ci.Components, c)))
		}
		for _, m := range mets {
			row = append(row, MeanCell("%.4f", p.Metrics[m], lookup(ci.Metrics, m)))
		}
		rows = append(rows, append(row, p.CostCells()...))
	}
	return head, rows
}

func (r EvalReport) markedName(n string) string {
	switch {
	case n == r.BestBaseline:
		return n + BestMark
	case slices.Contains(r.OutsideTask, n):
		return n + OutsideMark
	}
	return n
}

// PairedTable returns the trained policy's paired differences, one row
// per other policy in PolicyOrder ("grpo − NAME"), with the number of
// pairs, the joint reward (and, when the env reports core.MetricTask,
// its interval over task instances: "reward by task"), the figures of
// [EvalReport.Columns], makespan, tokens and LLM calls, each as mean
// [95 % interval] ([DiffCell]). It returns no rows when the trained
// policy was not evaluated.
func (r EvalReport) PairedTable(metrics []string) (head []string, rows [][]string) {
	return r.pairedTable("grpo", r.Paired, metrics)
}

// BestPairedTable is [EvalReport.PairedTable] for the best baseline's
// paired differences to the other policies ([EvalReport.BestPaired]).
func (r EvalReport) BestPairedTable(metrics []string) (head []string, rows [][]string) {
	return r.pairedTable(r.BestBaseline, r.BestPaired, metrics)
}

// pairedTable is the table of policy first's paired differences.
func (r EvalReport) pairedTable(first string, paired map[string]PairedResult, metrics []string) (head []string, rows [][]string) {
	if len(paired) == 0 {
		return nil, nil
	}
	comps, mets := r.Columns(metrics)
	byTask := tasksPaired(paired)
	head = []string{"difference", "pairs", "reward"}
	if byTask > 0 {
		head = append(head, fmt.Sprintf("reward by task (%d)", byTask))
	}
	head = append(append(append(head, comps...), mets...), core.MetricMakespan, core.MetricTokens, core.MetricLLMCalls)
	for _, n := range r.PolicyOrder() {
		d, ok := paired[n]
		if !ok {
			continue
		}
		pairs := fmt.Sprintf("%d", d.Pairs)
		if d.Excluded > 0 {
			pairs += fmt.Sprintf(" (%d excl.)", d.Excluded)
		}
		row := []string{r.markedName(first) + " − " + r.markedName(n), pairs, DiffCell("%.4f", d.Reward)}
		if byTask > 0 {
			cell := "–"
			if d.RewardByTask != nil {
				cell = DiffCell("%.4f", d.RewardByTask.Difference)
			}
			row = append(row, cell)
		}
		for _, c := range comps {
			row = append(row, diffOrDash("%.4f", d.Components, c))
		}
		for _, m := range mets {
			row = append(row, diffOrDash("%.4f", d.Metrics, m))
		}
		rows = append(rows, append(row, DiffCell("%.1f", d.MakespanS), DiffCell("%.0f", d.Tokens), DiffCell("%.1f", d.LLMCalls)))
	}
	return head, rows
}

// TaskTable returns the trained policy's paired difference in joint
// reward instance by instance ([PairedResult.ByTask]): one row per task
// instance (its name, or its number when the env names none) with the
// seeds that played it, one column per other policy in PolicyOrder
// ("grpo − NAME"), each cell the mean [95 % interval] over the
// instance's seeds ([DiffCell]). It returns no rows when the env reports
// no core.MetricTask or the trained policy was not evaluated.
func (r EvalReport) TaskTable() (head []string, rows [][]string) {
	var others []string
	byTask := map[string]map[int]TaskPair{} // policy → task → its pair
	tasks := map[int]TaskPair{}             // task → the pair with the most seeds
	for _, n := range r.PolicyOrder() {
		d, ok := r.Paired[n]
		if !ok || d.ByTask == nil {
			continue
		}
		others = append(others, n)
		byTask[n] = map[int]TaskPair{}
		for _, p := range d.ByTask {
			byTask[n][p.Task] = p
			if t, ok := tasks[p.Task]; !ok || p.Pairs > t.Pairs {
				tasks[p.Task] = p
			}
		}
	}
	if len(others) == 0 {
		return nil, nil
	}
	head = []string{"task", "seeds"}
	for _, n := range others {
		head = append(head, "grpo − "+r.markedName(n))
	}
	for _, k := range slices.Sorted(maps.Keys(tasks)) {
		name := tasks[k].Name
		if name == "" {
			name = fmt.Sprintf("%d", k)
		}
		row := []string{name, fmt.Sprintf("%d", tasks[k].Pairs)}
		for _, n := range others {
			cell := "–"
			if p, ok := byTask[n][k]; ok {
				cell = DiffCell("%.4f", p.Reward)
			}
			row = append(row, cell)
		}
		rows = append(rows, row)
	}
	return head, rows
}

// WriteTaskTable prints [EvalReport.TaskTable] as aligned text under a
// line that says what it is, and reports whether it printed it (nothing
// when the table has no rows).
func (r EvalReport) WriteTaskTable(w io.Writer) bool {
	head, rows := r.TaskTable()
	if len(rows) == 0 {
		return false
	}
	fmt.Fprintf(w, "\njoint reward by task instance: grpo − each policy on the seeds that played the instance, mean [95%% paired-bootstrap interval]\n")
	writeAligned(w, head, rows)
	return true
}

// tasksPaired returns the most task instances any paired difference of
// paired was grouped by (0 when the env reports no core.MetricTask).
func tasksPaired(paired map[string]PairedResult) int {
	n := 0
	for _, d := range paired {
		if d.RewardByTask != nil {
			n = max(n, d.RewardByTask.Tasks)
		}
	}
	return n
}

func diffOrDash(format string, m map[string]Difference, k string) string {
	if d, ok := m[k]; ok {
		return DiffCell(format, d)
	}
	return "–"
}

// WriteTable prints the report as aligned text: the evaluation table
// ([EvalReport.Table] with the quality metrics consistency, pass_rate and
// return), then the trained policy's paired differences
// ([EvalReport.PairedTable]).
func (r EvalReport) WriteTable(w io.Writer) {
	fmt.Fprintf(w, "evaluation: env %s, %d episodes per policy on held-out seeds (eval seed %d), LLM backend: %s\n", r.Env, r.Episodes, r.Seed, r.Backend)
	fmt.Fprintf(w, "mean ± half-width of the 95%% bootstrap interval (%d resamples over episodes); failed episodes are left out of the means and counted in \"failed\"; \"truncated\" episodes (cut at the step limit or a token budget) are scored\n", stats.Resamples)
	head, rows := r.Table(qualityMetrics)
	writeAligned(w, head, rows)
	if r.BestBaseline != "" {
		fmt.Fprintf(w, "%s best baseline: %s (highest mean joint reward)\n", BestMark, r.BestBaseline)
	}
	if r.hasOutsideTask() {
		fmt.Fprintf(w, "%s outside the task: does not play the task as posed (the env's outside_task), never the best baseline\n", OutsideMark)
	}
	if head, rows := r.PairedTable(qualityMetrics); len(rows) > 0 {
		fmt.Fprintf(w, "\npaired on the same seeds: mean difference [95%% paired-bootstrap interval]; a seed where either episode failed is excluded\n")
		if n := tasksPaired(r.Paired); n > 0 {
			fmt.Fprintf(w, "reward by task: the same mean, its interval over the %d task instances (documents, classes) the seeds played, resampled whole: whether the difference would hold on other instances\n", n)
		}
		writeAligned(w, head, rows)
	}
	if head, rows := r.BestPairedTable(qualityMetrics); len(rows) > 0 {
		fmt.Fprintf(w, "\nthe best baseline against the other policies on the same seeds, mean difference [95%% paired-bootstrap interval]: is it ahead of the next ones, or level with them\n")
		writeAligned(w, head, rows)
	}
	if head, rows := r.TrafficTable(); len(rows) > 0 {
		fmt.Fprintf(w, "\nLLM traffic per policy: totals over its episodes, failed ones included\n")
		writeAligned(w, head, rows)
	}
}

// hasOutsideTask reports whether an evaluated policy is outside the task.
func (r EvalReport) hasOutsideTask() bool {
	for _, n := range r.OutsideTask {
		if _, ok := r.Policies[n]; ok {
			return true
		}
	}
	return false
}

// TrafficTable returns each policy's LLM traffic ([PolicyResult.LLMTraffic]:
// requests, retries, responses 429 and 5xx, timeouts, seconds spent
// waiting), one row per policy in PolicyOrder; no rows when no policy
// sent a request (the simulated LLM, replayed completions).
func (r EvalReport) TrafficTable() (head []string, rows [][]string) {
	head = []string{"policy", "requests", "retries", "429", "5xx", "timeouts", "wait_s"}
	sent := false
	for _, n := range r.PolicyOrder() {
		t := r.Policies[n].LLMTraffic
		sent = sent || t.Requests > 0
		rows = append(rows, []string{n, fmt.Sprint(t.Requests), fmt.Sprint(t.Retries), fmt.Sprint(t.RateLimited),
			fmt.Sprint(t.ServerErrors), fmt.Sprint(t.Timeouts), fmt.Sprintf("%.1f", t.WaitSeconds)})
	}
	if !sent {
		return head, nil
	}
	return head, rows
}

// writeAligned prints head and rows as columns: the first left-aligned,
// the others right-aligned, two spaces apart.
func writeAligned(w io.Writer, head []string, rows [][]string) {
	all := append([][]string{head}, rows...)
	widths := make([]int, len(head))
	for _, row := range all {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range all {
		var b strings.Builder
		for i, c := range row {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s", widths[i], c)
			} else {
				fmt.Fprintf(&b, "  %*s", widths[i], c)
			}
		}
		fmt.Fprintln(w, b.String())
	}
}
