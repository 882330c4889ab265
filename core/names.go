package core

// Well-known episode metrics and artifacts: the names that envs, reward
// functions and the runtime agree on. An env reports its metrics in
// StepResult.Metrics on the last step (and lists them in EnvSpec.Metrics),
// the runtime adds its own to Episode.Metrics, and reward functions read
// them; an env and a reward function that use these names work together
// whoever wrote them, built in or plugged in.
const (
	// MetricMakespan is the episode's duration in seconds (virtual
	// seconds for simulated LLMs and step-timed tasks). Reported by the
	// env; the "makespan" reward and the evaluation's speedup read it.
	MetricMakespan = "makespan_s"
	// MetricReferenceMakespan is the duration the task's reference way of
	// working (usually a single agent, see EnvSpec.ReferenceBaseline)
	// would take on the same task; 0 means the env does not normalise
	// time. Reported by the env; the "makespan" reward reads it.
	MetricReferenceMakespan = "reference_makespan_s"
	// MetricTokens is the LLM tokens the episode spent. The env may report
	// it (counting what it charges); otherwise the runtime sets it to the
	// tokens its LLM calls used. The "tokens" reward reads it.
	MetricTokens = "tokens"
	// MetricReferenceTokens is the tokens the reference way of working
	// would spend; 0 means the env does not normalise cost. Reported by
	// the env; the "tokens" reward reads it.
	MetricReferenceTokens = "reference_tokens"
	// MetricLLMCalls is the number of LLM calls of the episode. The
	// runtime sets it (overriding the env's value of the same name).
	MetricLLMCalls = "llm_calls"
	// MetricLLMTokens is the tokens of the runtime's own LLM calls, set by
	// the runtime whatever the env reports as MetricTokens.
	MetricLLMTokens = "llm_tokens"
	// MetricBudgetStopped is 1 when a token budget ended the episode and
	// 0 otherwise; set by the runtime.
	MetricBudgetStopped = "budget_stopped"
	// MetricLLMRequests, MetricLLMRetries, MetricLLMRateLimited,
	// MetricLLMServerErrors, MetricLLMTimeouts and MetricLLMWait are the
	// episode's LLM traffic (the fields of [Traffic], summed over its
	// calls, failed calls included): HTTP requests sent, retries,
	// responses with status 429, responses with a 5xx status, requests
	// that timed out, and seconds spent waiting for a retry or a rate
	// limit. The runtime sets them when an agent of the team uses an LLM
	// other than the simulated one (which makes no requests); see
	// [Traffic.Metrics].
	MetricLLMRequests     = "llm_requests"
	MetricLLMRetries      = "llm_retries"
	MetricLLMRateLimited  = "llm_rate_limited"
	MetricLLMServerErrors = "llm_server_errors"
	MetricLLMTimeouts     = "llm_timeouts"
	MetricLLMWait         = "llm_wait_s"
	// MetricReturn is the team's return (the sum of its per-step
	// rewards). Reported by envs with a return, such as lbf and matrix;
	// the "return" reward reads it.
	MetricReturn = "return"
	// MetricPassRate is the fraction of a coding task's functions whose
	// hidden tests pass. Reported by the coding env; the
	// "coding.pass_rate" reward reads it and reports it again.
	MetricPassRate = "pass_rate"
	// MetricConsistency is a document's consistency score in [0, 1],
	// reported by the "writing.consistency" reward.
	MetricConsistency = "consistency"
	// MetricReplayedCalls is the number of recorded LLM completions an
	// env replayed itself instead of having the runtime call an LLM (the
	// classeval env replays the completions real models wrote). An env
	// that lists it in EnvSpec.Metrics and has no decision needing text
	// has its results labelled "replay" (rollout's Setup.Backend).
	MetricReplayedCalls = "replayed_calls"
	// MetricTask identifies the task instance an episode plays — the
	// document, the class — as a number: episodes that play the same
	// instance (with other teams, other seeds) report the same value. An
	// env whose seeds draw from a finite set of instances reports it (and
	// lists it in EnvSpec.Metrics). It is a label, not a measure: the
	// evaluation groups the trained policy's paired differences by it (an
	// interval over instances beside the one over seeds) and reports no
	// mean of it, nor does training.
	MetricTask = "task"
)

// Metrics returns t as episode metrics, keyed by the MetricLLMRequests …
// MetricLLMWait names.
func (t Traffic) Metrics() map[string]float64 {
	return map[string]float64{
		MetricLLMRequests:     float64(t.Requests),
		MetricLLMRetries:      float64(t.Retries),
		MetricLLMRateLimited:  float64(t.RateLimited),
		MetricLLMServerErrors: float64(t.ServerErrors),
		MetricLLMTimeouts:     float64(t.Timeouts),
		MetricLLMWait:         t.WaitSeconds,
	}
}

// ArtifactDocument is the artifact that holds a writing task's final
// document (Markdown). The writing env puts it in StepResult.Artifacts and
// the "writing.consistency" reward scores it.
const ArtifactDocument = "document.md"
