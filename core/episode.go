package core

import (
	"fmt"
	"slices"
	"strings"
)

// Episode is a finished (or stopped) episode as reward functions see it.
type Episode struct {
	Env  string `json:"env"`
	Seed uint64 `json:"seed"`
	// Steps is the number of env steps taken.
	Steps int `json:"steps"`
	// AgentReturns is each agent's sum of per-step rewards (zeros when the
	// env gives none).
	AgentReturns []float64 `json:"agent_returns"`
	// Metrics are the env's final metrics plus the runtime's:
	// [MetricTokens] (unless the env reports it), [MetricLLMCalls],
	// [MetricLLMTokens] and [MetricBudgetStopped], and the LLM traffic
	// ([Traffic.Metrics]) when an agent uses an endpoint.
	Metrics map[string]float64 `json:"metrics"`
	// Artifacts are the env's final artifacts.
	Artifacts map[string][]byte `json:"-"`
	// AgentUsage is the LLM usage of each agent.
	AgentUsage []Usage `json:"agent_usage"`
	// Truncated and Terminated mirror the last StepResult.
	Terminated bool `json:"terminated"`
	Truncated  bool `json:"truncated"`
	// BudgetStopped is true when a token budget ended the episode.
	BudgetStopped bool `json:"budget_stopped"`
}

// RewardFunc scores a finished episode into named components.
// Implementations must be deterministic and safe for concurrent use.
type RewardFunc interface {
	// Name identifies the reward function, e.g. "writing.consistency".
	Name() string
	// Components lists the component names Score returns, e.g. "quality".
	Components() []string
	// Score returns one value per component (higher is better). It may
	// also return extra metrics to log (e.g. each consistency check).
	Score(ep *Episode) (components, metrics map[string]float64, err error)
}

// MetricReader is implemented by reward functions that read episode
// metrics: RequiredMetrics names the metrics Score cannot do without (e.g.
// [MetricMakespan]). The runtime checks before training and evaluation
// that each is a metric the env lists in [EnvSpec].Metrics or one the
// runtime sets on every episode ([RuntimeMetrics]), so a reward whose
// metric no episode carries is a configuration error at load, not a
// failure of every episode ([CheckRequiredMetrics]). The runtime finds it
// with [RequiredMetricsOf]; the plugin hosts carry it from their plugins
// (the Wasm spec's "reward.metrics", the gRPC RewardInfo's metrics).
type MetricReader interface {
	RequiredMetrics() []string
}

// RequiredMetricsOf returns the metrics r declares it needs, or nil when r
// is not a [MetricReader].
func RequiredMetricsOf(r RewardFunc) []string {
	if m, ok := r.(MetricReader); ok {
		return m.RequiredMetrics()
	}
	return nil
}

// RuntimeMetrics returns the metrics the runtime sets on every episode,
// whatever the env reports: [MetricTokens] (when the env does not report
// it), [MetricLLMCalls], [MetricLLMTokens] and [MetricBudgetStopped].
func RuntimeMetrics() []string {
	return []string{MetricTokens, MetricLLMCalls, MetricLLMTokens, MetricBudgetStopped}
}

// CheckRequiredMetrics reports the first metric that r requires
// ([RequiredMetricsOf]) and that no episode of spec's env carries: one
// neither listed in spec.Metrics nor among [RuntimeMetrics].
func CheckRequiredMetrics(spec EnvSpec, r RewardFunc) error {
	for _, m := range RequiredMetricsOf(r) {
		if slices.Contains(spec.Metrics, m) || slices.Contains(RuntimeMetrics(), m) {
			continue
		}
		have := "none"
		if len(spec.Metrics) > 0 {
			have = strings.Join(spec.Metrics, ", ")
		}
		return fmt.Errorf("reward %s needs the episode metric %q, which env %s does not report (its spec lists: %s; the runtime adds %s)",
			r.Name(), m, spec.Name, have, strings.Join(RuntimeMetrics(), ", "))
	}
	return nil
}
