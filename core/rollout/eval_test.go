package rollout

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/troupe-dev/troupe/internal/stats"
)

// The table lists grpo, then the env's baselines in the spec's order, then
// random, then any other policy by name.
func TestPolicyOrder(t *testing.T) {
	r := EvalReport{Baselines: []string{"sop", "single_agent"}, Policies: map[string]PolicyResult{}}
	for _, n := range []string{"zeta", "random", "single_agent", "alpha", "sop", "grpo"} {
		r.Policies[n] = PolicyResult{}
	}
	want := []string{"grpo", "sop", "single_agent", "random", "alpha", "zeta"}
	if got := r.PolicyOrder(); !slices.Equal(got, want) {
		t.Fatalf("PolicyOrder() = %v, want %v", got, want)
	}
}

// With no reference baseline the table shows no speedup ("–", not 0.00),
// still aligned; with one it shows the ratio.
func TestWriteTableSpeedup(t *testing.T) {
	r := EvalReport{Env: "climb", Policies: map[string]PolicyResult{
		"grpo":   {Reward: 1, MakespanS: 2},
		"random": {Reward: 0.5, MakespanS: 4},
	}}
	var b strings.Builder
	r.WriteTable(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")[2:] // after the title and the legend
	if len(lines) != 3 {
		t.Fatalf("table:\n%s", b.String())
	}
	head := strings.Fields(lines[0])
	col := slices.Index(head, "speedup")
	for _, l := range lines[1:] {
		if f := strings.Fields(l); col < 0 || f[col] != "–" {
			t.Errorf("speedup without a reference: row %q, want –", l)
		}
		if utf8.RuneCountInString(l) != utf8.RuneCountInString(lines[0]) {
			t.Errorf("row %q is not as wide as the header %q", l, lines[0])
		}
	}
	r.Reference = "random"
	r.Policies["grpo"] = PolicyResult{Reward: 1, MakespanS: 2, Speedup: 2}
	r.Policies["random"] = PolicyResult{Reward: 0.5, MakespanS: 4, Speedup: 1}
	b.Reset()
	r.WriteTable(&b)
	if !strings.Contains(b.String(), "  2.00  ") || !strings.Contains(b.String(), "  1.00  ") {
		t.Errorf("speedups against a reference:\n%s", b.String())
	}
}

// The table shows each mean with the half-width of its interval, marks
// the best baseline and lists grpo − every other policy with the
// interval's ends; eval --json carries the intervals and the paired
// section beside the old mean fields.
func TestWriteTableIntervalsAndPaired(t *testing.T) {
	iv := func(lo, hi float64) stats.Interval { return stats.Interval{Lo: lo, Hi: hi} }
	r := EvalReport{Env: "t", Episodes: 10, Baselines: []string{"sop", "naive"}, BestBaseline: "sop", Policies: map[string]PolicyResult{
		"grpo":  {Reward: 0.8, CI95: &PolicyCI{Reward: iv(0.75, 0.85)}},
		"sop":   {Reward: 0.7, CI95: &PolicyCI{Reward: iv(0.6, 0.7)}},
		"naive": {Reward: 0.5, FailedEpisodes: 2, FailedShare: 0.2, CI95: &PolicyCI{Reward: iv(0.4, 0.6)}},
	}, Paired: map[string]PairedResult{
		"sop":   {Pairs: 10, Reward: Difference{Mean: 0.1, CI95: iv(0.02, 0.19)}},
		"naive": {Pairs: 8, Excluded: 2, Reward: Difference{Mean: -0.3, CI95: iv(-0.5, -0.1)}},
	}}
	var b strings.Builder
	r.WriteTable(&b)
	out := b.String()
	for _, want := range []string{
		"grpo    0.8000 ±0.0500", "sop*    0.7000 ±0.0500", "2 (20%)", "* best baseline: sop",
		"grpo − sop*            10  +0.1000 [+0.0200, +0.1900]", "grpo − naive  8 (2 excl.)  -0.3000 [-0.5000, -0.1000]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"reward":0.8,`, `"ci95":{"reward":{"lo":0.75,"hi":0.85}`, `"best_baseline":"sop"`,
		`"paired":{"naive":{"pairs":8,"excluded":2,"reward":{"mean":-0.3,"ci95":{"lo":-0.5,"hi":-0.1}}`} {
		if !strings.Contains(string(js), want) {
			t.Errorf("eval --json lacks %s: %s", want, js)
		}
	}
	// A difference with no pair is null, not an invalid NaN.
	r.Paired["naive"] = PairedResult{Excluded: 10, Reward: Difference{Mean: math.NaN(), CI95: stats.Interval{Lo: math.NaN(), Hi: math.NaN()}}}
	if js, err := json.Marshal(r); err != nil || !strings.Contains(string(js), `"reward":{"mean":null,"ci95":{"lo":null,"hi":null}}`) {
		t.Errorf("no pair: %s, %v", js, err)
	}
}

// A baseline outside the task is reported, marked, and never the best
// baseline, even with the highest joint reward.
func TestOutsideTaskIsNeverBestBaseline(t *testing.T) {
	iv := func(lo, hi float64) stats.Interval { return stats.Interval{Lo: lo, Hi: hi} }
	r := EvalReport{Env: "t", Episodes: 10, Baselines: []string{"team", "solo_big"}, OutsideTask: []string{"solo_big"}, Policies: map[string]PolicyResult{
		"grpo":     {Reward: 0.8, CI95: &PolicyCI{Reward: iv(0.7, 0.9)}},
		"team":     {Reward: 0.6, CI95: &PolicyCI{Reward: iv(0.5, 0.7)}},
		"solo_big": {Reward: 0.9, CI95: &PolicyCI{Reward: iv(0.8, 1.0)}},
		"random":   {Reward: 0.1, CI95: &PolicyCI{Reward: iv(0.0, 0.2)}},
	}}
	if got := r.bestBaseline(); got != "team" {
		t.Fatalf("bestBaseline() = %q, want team (solo_big is outside the task)", got)
	}
	r.BestBaseline = r.bestBaseline()
	var b strings.Builder
	r.WriteTable(&b)
	for _, want := range []string{"solo_big" + OutsideMark, "team" + BestMark, OutsideMark + " outside the task"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	r.OutsideTask = nil
	if got := r.bestBaseline(); got != "solo_big" {
		t.Errorf("without outside_task: bestBaseline() = %q, want solo_big", got)
	}
}
