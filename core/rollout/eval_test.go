package rollout

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
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
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")[1:] // after the title
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
