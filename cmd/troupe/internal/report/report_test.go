package report

import (
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/internal/stats"
)

// report.md shows the means with their intervals and failed shares, marks
// the best baseline, says in words how the trained policy compares with
// it, and lists the paired differences.
func TestMarkdownEvaluation(t *testing.T) {
	iv := func(lo, hi float64) stats.Interval { return stats.Interval{Lo: lo, Hi: hi} }
	rep := &rollout.EvalReport{Env: "writing", Episodes: 20, Seed: 1, Backend: "sim", Baselines: []string{"sop", "naive"}, BestBaseline: "sop",
		Policies: map[string]rollout.PolicyResult{
			"grpo":  {Reward: 1.2, Metrics: map[string]float64{"consistency": 0.99}, CI95: &rollout.PolicyCI{Reward: iv(1.1, 1.3), Metrics: map[string]stats.Interval{"consistency": iv(0.98, 1)}}},
			"sop":   {Reward: 1.0, Metrics: map[string]float64{"consistency": 0.98}, CI95: &rollout.PolicyCI{Reward: iv(0.9, 1.1)}},
			"naive": {Reward: 0.7, FailedEpisodes: 5, FailedShare: 0.25, Metrics: map[string]float64{"consistency": 0.7}, CI95: &rollout.PolicyCI{Reward: iv(0.6, 0.8)}},
		},
		Paired: map[string]rollout.PairedResult{
			"sop":   {Pairs: 20, Reward: rollout.Difference{Mean: 0.2, CI95: iv(0.1, 0.3)}},
			"naive": {Pairs: 15, Excluded: 5, Reward: rollout.Difference{Mean: 0.5, CI95: iv(0.4, 0.6)}},
		}}
	md := Markdown("p", nil, rep)
	for _, want := range []string{
		"| grpo | 1.2000 ±0.1000 | 0.9900 ±0.0100 |", "| sop* | 1.0000 ±0.1000 |", "| 5 (25%) | 0 |",
		"**grpo − sop** (best baseline), paired on 20 seeds: joint reward +0.2000 [+0.1000, +0.3000] (95 % interval): the trained policy is better.",
		"| grpo − naive | 15 (5 excl.) | +0.5000 [+0.4000, +0.6000] |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	rep.Paired["sop"] = rollout.PairedResult{Pairs: 20, Reward: rollout.Difference{Mean: 0.02, CI95: iv(-0.05, 0.09)}}
	if md := Markdown("p", nil, rep); !strings.Contains(md, "the interval holds 0, so these episodes do not tell the two apart") {
		t.Errorf("an interval around 0 is not called a tie:\n%s", md)
	}
	rep.Paired["sop"] = rollout.PairedResult{Pairs: 20, Reward: rollout.Difference{Mean: -0.2, CI95: iv(-0.3, -0.1)}}
	if md := Markdown("p", nil, rep); !strings.Contains(md, "the trained policy is worse") {
		t.Errorf("a negative interval is not called worse:\n%s", md)
	}
	if md := Markdown("p", nil, rep); strings.Contains(md, "task instances") || strings.Contains(md, "reward by task") {
		t.Errorf("an env without task instances gets a by-task figure:\n%s", md)
	}
	// An env that reports its task instances: the interval over them, in
	// the sentence and as a column.
	rep.Paired["sop"] = rollout.PairedResult{Pairs: 20, Reward: rollout.Difference{Mean: 0.2, CI95: iv(0.1, 0.3)},
		RewardByTask: &rollout.TaskDifference{Difference: rollout.Difference{Mean: 0.2, CI95: iv(-0.1, 0.5)}, Tasks: 4}}
	md = Markdown("p", nil, rep)
	for _, want := range []string{
		"Over the 4 task instances (documents, classes) the seeds played, resampled whole, its interval is +0.2000 [-0.1000, +0.5000]",
		"| difference | pairs | reward | reward by task (4) |",
		"| grpo − sop* | 20 | +0.2000 [+0.1000, +0.3000] | +0.2000 [-0.1000, +0.5000] |",
		"| grpo − naive | 15 (5 excl.) | +0.5000 [+0.4000, +0.6000] | – |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
}
