package core

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
	// [MetricLLMTokens] and [MetricBudgetStopped].
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
