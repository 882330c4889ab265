package report

import (
	"strings"
	"testing"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/trainer"
)

// report.md states the LLM traffic of training (summed over iterations)
// and of each evaluated policy in a table of its own, not as metric
// columns; a run that sent no request says nothing about it.
func TestMarkdownTraffic(t *testing.T) {
	history := []trainer.IterationStats{
		{Iteration: 1, Backend: "openai", LLMTraffic: core.Traffic{Requests: 100, Retries: 30, RateLimited: 25, ServerErrors: 5, WaitSeconds: 40}},
		{Iteration: 2, Backend: "openai", LLMTraffic: core.Traffic{Requests: 80, Retries: 10, RateLimited: 10, Timeouts: 2, WaitSeconds: 20.4}},
	}
	perEpisode := core.Traffic{Requests: 3, Retries: 1, RateLimited: 1}.Metrics()
	rep := &rollout.EvalReport{Env: "writing", Episodes: 10, Seed: 1, Backend: "openai", Baselines: []string{"sop"},
		Policies: map[string]rollout.PolicyResult{
			"sop":    {Reward: 1, Metrics: perEpisode, LLMTraffic: core.Traffic{Requests: 30, Retries: 10, RateLimited: 9, ServerErrors: 1, WaitSeconds: 12.25}},
			"random": {Reward: 0.5, Metrics: perEpisode, FailedEpisodes: 2, LLMTraffic: core.Traffic{Requests: 41, Retries: 11, Timeouts: 11, WaitSeconds: 3}},
		}}
	md := Markdown("p", history, rep)
	for _, want := range []string{
		"LLM traffic during training (all iterations, failed episodes included): 180 requests, 40 retries, 35 responses 429 (rate limited), 5 responses 5xx, 2 timeouts, 60 s spent waiting",
		"| policy | requests | retries | 429 | 5xx | timeouts | wait_s |",
		"| sop | 30 | 10 | 9 | 1 | 0 | 12.2 |",
		"| random | 41 | 11 | 0 | 0 | 11 | 3.0 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| "+core.MetricLLMRequests) || strings.Contains(md, core.MetricLLMRetries+" |") {
		t.Errorf("traffic metrics are shown as metric columns:\n%s", md)
	}

	for i := range history {
		history[i].LLMTraffic, history[i].Backend = core.Traffic{}, "sim"
	}
	for n, p := range rep.Policies {
		p.LLMTraffic, p.Metrics = core.Traffic{}, nil
		rep.Policies[n] = p
	}
	if md := Markdown("p", history, rep); strings.Contains(md, "traffic") {
		t.Errorf("a run without requests reports traffic:\n%s", md)
	}
}

// A warm-started run says in report.md which baseline it imitated and how
// well, so that the reader compares the policy with that baseline; a run
// without one says nothing about it.
func TestMarkdownWarmStart(t *testing.T) {
	im := &trainer.ImitationStats{Baseline: "strong_by_team", Episodes: 256, Decisions: 1881, LossBefore: 1.3326, LossAfter: 0.0495, Agreement: 0.9814}
	history := []trainer.IterationStats{{Iteration: 1, Backend: "replay", Imitation: im}, {Iteration: 2, Backend: "replay"}}
	want := "Warm start: the policy first imitated the baseline `strong_by_team` (256 episodes, 0 failed, 1881 decisions; loss 1.333 → 0.050 nats, agreement 0.981)"
	if md := Markdown("p", history, nil); !strings.Contains(md, want) {
		t.Errorf("report.md lacks %q:\n%s", want, md)
	}
	history[0].Imitation = nil
	if md := Markdown("p", history, nil); strings.Contains(md, "Warm start") {
		t.Errorf("a run without imitation reports a warm start:\n%s", md)
	}
}
