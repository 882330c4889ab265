package rollout

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/policy"
)

// PolicyResult is one policy's row of an evaluation: means over the
// evaluation episodes that did not fail.
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
}

// Evaluate plays every policy on the same held-out seeds: the trained
// policy as "grpo" (greedy unless e.Sampled; skipped when trained is nil),
// each baseline the env offers, and "random". Speedups are measured
// against the env's reference baseline (core.EnvSpec.ReferenceBaseline).
func Evaluate(ctx context.Context, s Setup, trained *policy.Policy, e Eval) (EvalReport, error) {
	if err := s.Validate(); err != nil {
		return EvalReport{}, err
	}
	spec := s.Env.Spec()
	if err := e.Validate(); err != nil {
		return EvalReport{}, err.(*core.SettingError).In("eval")
	}
	if err := e.CheckPolicies(spec, trained != nil); err != nil {
		return EvalReport{}, err.(*core.SettingError).In("eval")
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
			return EvalReport{}, err
		}
	}
	p, err := NewPool(&s)
	if err != nil {
		return EvalReport{}, err
	}
	defer p.Close()
	jobs := make([]Job, e.Episodes)
	for i := range jobs {
		ts := EvalTaskSeed(e.Seed, i)
		jobs[i] = Job{Task: ts, Rollout: RolloutSeed(ts, 0)}
	}
	var trainedActor actor
	if trained != nil {
		trainedActor = policyActor{p: trained, greedy: !e.Sampled}
	}
	rep := EvalReport{
		Env: spec.Name, Episodes: e.Episodes, Seed: e.Seed, Sampled: e.Sampled, Backend: s.Backend(spec),
		Baselines: spec.Baselines, Reference: spec.ReferenceBaseline, Policies: map[string]PolicyResult{},
	}
	for _, name := range names {
		results, err := p.play(ctx, jobs, newActorFor(name, trainedActor), false)
		if err != nil {
			return rep, err
		}
		rep.Policies[name] = summarize(results)
		if r := rep.Policies[name]; r.FailedEpisodes == len(results) {
			return rep, fmt.Errorf("eval: every episode of policy %s failed: %s", name, FailureSummary(results))
		}
	}
	if ref, ok := rep.Policies[rep.Reference]; ok && ref.MakespanS > 0 {
		for name, r := range rep.Policies {
			if r.MakespanS > 0 {
				r.Speedup = ref.MakespanS / r.MakespanS
				rep.Policies[name] = r
			}
		}
	}
	return rep, nil
}

func checkPolicyFits(p *policy.Policy, obs, decisions, agents int) error {
	c := p.Config()
	if c.ObsSize != obs || c.NumDecisions != decisions || c.NumAgents != agents {
		return fmt.Errorf("the policy was trained for obs %d, %d decisions, %d agents; this env has obs %d, %d decisions, %d agents",
			c.ObsSize, c.NumDecisions, c.NumAgents, obs, decisions, agents)
	}
	return nil
}

func summarize(results []EpisodeResult) PolicyResult {
	r := PolicyResult{Components: map[string]float64{}, Metrics: map[string]float64{}}
	n := 0
	for _, x := range results {
		if x.Failed {
			r.FailedEpisodes++
			continue
		}
		n++
		r.Reward += x.Reward
		for k, v := range x.Components {
			r.Components[k] += v
		}
		for k, v := range x.Metrics {
			switch k {
			case core.MetricMakespan:
				r.MakespanS += v
			case core.MetricTokens:
				r.Tokens += v
			case core.MetricLLMCalls:
				r.LLMCalls += v
			default:
				r.Metrics[k] += v
			}
		}
	}
	if n == 0 {
		return r
	}
	f := float64(n)
	r.Reward /= f
	r.MakespanS /= f
	r.Tokens /= f
	r.LLMCalls /= f
	for k := range r.Components {
		r.Components[k] /= f
	}
	for k := range r.Metrics {
		r.Metrics[k] /= f
	}
	return r
}

// CostColumns names the time-and-cost columns of an evaluation table, the
// cells of [PolicyResult.CostCells].
func CostColumns() []string {
	return []string{core.MetricMakespan, "speedup", core.MetricTokens, core.MetricLLMCalls, "failed"}
}

// CostCells formats p's makespan, speedup ("–" when there is no reference
// baseline to measure against), tokens, LLM calls and failed episodes as
// table cells, in the order of [CostColumns].
func (p PolicyResult) CostCells() []string {
	speedup := "–"
	if p.Speedup != 0 {
		speedup = fmt.Sprintf("%.2f", p.Speedup)
	}
	return []string{fmt.Sprintf("%.1f", p.MakespanS), speedup, fmt.Sprintf("%.0f", p.Tokens), fmt.Sprintf("%.1f", p.LLMCalls), fmt.Sprintf("%d", p.FailedEpisodes)}
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

// qualityMetrics are shown in the table when present.
var qualityMetrics = []string{core.MetricConsistency, core.MetricPassRate, core.MetricReturn}

// WriteTable prints the report as an aligned text table. A policy with no
// speedup (0: the env names no reference baseline, or it was not
// evaluated) shows "–" for it.
func (r EvalReport) WriteTable(w io.Writer) {
	var comps []string
	seen := map[string]bool{}
	for _, n := range r.PolicyOrder() {
		for c := range r.Policies[n].Components {
			if !seen[c] {
				seen[c] = true
				comps = append(comps, c)
			}
		}
	}
	sort.Strings(comps)
	var qual []string
	for _, q := range qualityMetrics {
		if seen[q] {
			continue // already a component column
		}
		for _, n := range r.PolicyOrder() {
			if _, ok := r.Policies[n].Metrics[q]; ok {
				qual = append(qual, q)
				break
			}
		}
	}
	fmt.Fprintf(w, "evaluation: env %s, %d episodes per policy on held-out seeds (eval seed %d), LLM backend: %s\n", r.Env, r.Episodes, r.Seed, r.Backend)
	head := []string{"policy", "reward"}
	head = append(head, comps...)
	head = append(head, qual...)
	head = append(head, CostColumns()...)
	rows := [][]string{head}
	for _, n := range r.PolicyOrder() {
		p := r.Policies[n]
		row := []string{n, fmt.Sprintf("%.4f", p.Reward)}
		for _, c := range comps {
			row = append(row, fmt.Sprintf("%.4f", p.Components[c]))
		}
		for _, q := range qual {
			row = append(row, fmt.Sprintf("%.4f", p.Metrics[q]))
		}
		rows = append(rows, append(row, p.CostCells()...))
	}
	widths := make([]int, len(head))
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	for _, row := range rows {
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
