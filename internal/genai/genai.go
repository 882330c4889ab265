// Package genai declares, in one place, every attribute key, event name
// and span name that troupe's OpenTelemetry spans and metrics use: the
// GenAI semantic conventions of semconv v1.41.0 (pinned: later semconv
// packages dropped the GenAI names) and troupe's own troupe.* keys.
// core/telemetry makes the spans; core/llm adds what only the OpenAI
// client knows (the response's model, id and finish reasons, its retries)
// to the chat span it is called under.
package genai

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// SchemaURL is the semantic conventions' schema of troupe's tracer and
// meter.
const SchemaURL = semconv.SchemaURL

// The GenAI keys of the semantic conventions (semconv v1.41.0).
const (
	OperationName         = semconv.GenAIOperationNameKey
	ProviderName          = semconv.GenAIProviderNameKey
	RequestModel          = semconv.GenAIRequestModelKey
	RequestTemperature    = semconv.GenAIRequestTemperatureKey
	RequestMaxTokens      = semconv.GenAIRequestMaxTokensKey
	RequestSeed           = semconv.GenAIRequestSeedKey
	ResponseModel         = semconv.GenAIResponseModelKey
	ResponseID            = semconv.GenAIResponseIDKey
	ResponseFinishReasons = semconv.GenAIResponseFinishReasonsKey
	UsageInputTokens      = semconv.GenAIUsageInputTokensKey
	UsageOutputTokens     = semconv.GenAIUsageOutputTokensKey
	TokenType             = semconv.GenAITokenTypeKey
	AgentName             = semconv.GenAIAgentNameKey
	AgentID               = semconv.GenAIAgentIDKey
	WorkflowName          = semconv.GenAIWorkflowNameKey
	ConversationID        = semconv.GenAIConversationIDKey
	EvaluationName        = semconv.GenAIEvaluationNameKey
	EvaluationScoreValue  = semconv.GenAIEvaluationScoreValueKey
	InputMessages         = semconv.GenAIInputMessagesKey
	OutputMessages        = semconv.GenAIOutputMessagesKey
	ServerAddress         = semconv.ServerAddressKey
	ServerPort            = semconv.ServerPortKey
	ErrorType             = semconv.ErrorTypeKey
	HTTPStatusCode        = semconv.HTTPResponseStatusCodeKey
	ServiceName           = semconv.ServiceNameKey
)

// The values of gen_ai.operation.name and gen_ai.token.type troupe uses.
var (
	OperationChat           = semconv.GenAIOperationNameChat
	OperationInvokeAgent    = semconv.GenAIOperationNameInvokeAgent
	OperationInvokeWorkflow = semconv.GenAIOperationNameInvokeWorkflow
	TokenTypeInput          = semconv.GenAITokenTypeInput
	TokenTypeOutput         = semconv.GenAITokenTypeOutput
)

// Span names are these prefixes followed by the model (chat), the agent
// (invoke_agent) or the env (invoke_workflow).
const (
	SpanChat           = "chat "
	SpanInvokeAgent    = "invoke_agent "
	SpanInvokeWorkflow = "invoke_workflow "
	SpanIteration      = "train iteration "
)

// Event names.
const (
	// EventRetry is an event on a chat span per retried HTTP attempt
	// (core/llm's OpenAI client).
	EventRetry = "gen_ai.client.retry"
	// EventEvaluation is an event on an episode span per reward
	// component.
	EventEvaluation = "gen_ai.evaluation.result"
)

// troupe's own keys.
const (
	// Backend is the backend of the episode's agents ("sim", "openai",
	// "replay:openai", …; several, comma-separated, when they differ), on
	// episode spans.
	Backend attribute.Key = "troupe.llm.backend"
	// Decision is the decision an LLM call writes the text of, on
	// invoke_agent spans.
	Decision attribute.Key = "troupe.decision"
	// Latency is the latency the call was charged, in seconds, on chat
	// spans: the simulated LLM's and a replayed completion's virtual
	// latency (what the env's clock advances by, and what
	// gen_ai.client.operation.duration records for them), or a real
	// call's wall time including queueing and retries.
	Latency attribute.Key = "troupe.llm.latency_s"
	// Requests, Retries, RateLimited, ServerErrors, Timeouts and Wait are
	// a call's traffic (core.Traffic), on chat spans, failed calls' too,
	// when it sent a request; a count that is 0 is left out.
	Requests     attribute.Key = "troupe.llm.requests"
	Retries      attribute.Key = "troupe.llm.retries"
	RateLimited  attribute.Key = "troupe.llm.rate_limited"
	ServerErrors attribute.Key = "troupe.llm.server_errors"
	Timeouts     attribute.Key = "troupe.llm.timeouts"
	Wait         attribute.Key = "troupe.llm.wait_s"
	// Attempt, RetryDelay, RetryAfter and RetryError describe one retry,
	// on its gen_ai.client.retry event: the attempt that failed (from 1),
	// the wait before the next one in seconds, whether the server said
	// how long (Retry-After), and the attempt's error (redacted).
	Attempt    attribute.Key = "troupe.llm.attempt"
	RetryDelay attribute.Key = "troupe.llm.retry_delay_s"
	RetryAfter attribute.Key = "troupe.llm.retry_after"
	RetryError attribute.Key = "troupe.llm.error"
	// Iteration is the training iteration (from 1), on iteration spans.
	Iteration attribute.Key = "troupe.iteration"
	// EpisodeSteps, EpisodeFailed, EpisodeFailure and EpisodeReward are
	// what an episode came to, on its span.
	EpisodeSteps   attribute.Key = "troupe.episode.steps"
	EpisodeFailed  attribute.Key = "troupe.episode.failed"
	EpisodeFailure attribute.Key = "troupe.episode.failure"
	EpisodeReward  attribute.Key = "troupe.episode.reward"
)
