package core

import (
	"context"
	"math/rand/v2"
	"time"
)

// Observation is what one agent sees at one step.
type Observation struct {
	// Features is the policy's input, of length EnvSpec.ObsSize.
	Features []float64
	// Text is the agent's own context for its LLM: everything this agent
	// has been told, has read or has written, and nothing else.
	Text string
	// Mask marks the decisions legal now (len EnvSpec.Decisions). A nil
	// mask means every decision is legal. At least one entry must be true.
	Mask []bool
}

// Legal reports whether decision d is legal under the mask.
func (o Observation) Legal(d int) bool {
	return o.Mask == nil || (d >= 0 && d < len(o.Mask) && o.Mask[d])
}

// NumLegal returns the number of legal decisions among the first n (n is
// len(EnvSpec.Decisions)).
func (o Observation) NumLegal(n int) int {
	if o.Mask == nil {
		return n
	}
	legal := 0
	for _, m := range o.Mask[:min(n, len(o.Mask))] {
		if m {
			legal++
		}
	}
	return legal
}

// Usage is what one LLM call cost.
type Usage struct {
	PromptTokens     int           `json:"prompt_tokens"`
	CompletionTokens int           `json:"completion_tokens"`
	Latency          time.Duration `json:"latency_ns"`
	// Backend names the backend that produced the text ("sim", "openai",
	// "replay"); empty when no LLM was called.
	Backend string `json:"backend,omitempty"`
}

// Tokens returns PromptTokens + CompletionTokens.
func (u Usage) Tokens() int { return u.PromptTokens + u.CompletionTokens }

// Add returns the sum of two usages; latencies add, Backend is kept from u
// unless it is empty.
func (u Usage) Add(v Usage) Usage {
	u.PromptTokens += v.PromptTokens
	u.CompletionTokens += v.CompletionTokens
	u.Latency += v.Latency
	if u.Backend == "" {
		u.Backend = v.Backend
	}
	return u
}

// Action is one agent's part of the joint action.
type Action struct {
	// Decision indexes EnvSpec.Decisions.
	Decision int
	// Text is the LLM's output when the decision needs text.
	Text string
	// Usage is what producing Text cost (zero when no LLM was called).
	Usage Usage
}

// StepResult is the env's reply to a joint action (PettingZoo parallel API).
type StepResult struct {
	// Observations holds one observation per agent.
	Observations []Observation
	// Rewards optionally holds one per-step reward per agent (nil when the
	// env scores only whole episodes).
	Rewards []float64
	// Terminated is true when the task reached a terminal state;
	// Truncated when it was cut short (time limit, budget).
	Terminated, Truncated bool
	// Metrics are episode measurements, reported at least on the last step
	// (e.g. [MetricMakespan], [MetricTokens]).
	Metrics map[string]float64
	// Artifacts are the episode's products (the document, the code), by
	// file name, reported at least on the last step (e.g.
	// [ArtifactDocument]).
	Artifacts map[string][]byte
}

// Done reports Terminated || Truncated.
func (r StepResult) Done() bool { return r.Terminated || r.Truncated }

// Env is a collaborative task. An Env is used by one goroutine at a time;
// the runtime opens one instance per worker.
//
// An env must replay: after Reset(seed), the same sequence of joint actions
// (decisions and texts) must give the same observations (features, texts,
// masks), rewards, episode ends, states, metrics and artifacts, to the bit,
// on every instance and whatever episodes the instance played before. So
// all randomness comes from the seed (not the clock, a global generator or
// map order) and Reset clears every per-episode state. Training with
// credit = "counterfactual" relies on it: it resets an env with a played
// episode's seed, feeds the recorded actions up to a branch point, and
// plays another decision there. envtest.Check checks it.
type Env interface {
	// Spec describes the env. It must not change over the env's life.
	Spec() EnvSpec
	// Reset starts an episode. The same seed must reproduce the same
	// episode for the same actions (see the replay rule above).
	Reset(seed uint64) ([]Observation, error)
	// Step applies the joint action, one Action per agent.
	Step(actions []Action) (StepResult, error)
	// State returns the global state (len EnvSpec.StateSize), seen only by
	// centralized training.
	State() []float64
	// Close releases the env's resources.
	Close() error
}

// Truncater is implemented by envs that can end an episode early on request
// (a token budget ran out) and still report what was achieved so far. The
// env declares it with [CapTruncate]; the runtime finds it with
// [TruncaterOf].
type Truncater interface {
	// Truncate ends the current episode and returns its final result with
	// Truncated set, including metrics and artifacts of the partial work.
	Truncate() (StepResult, error)
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// ChatRequest is one LLM call, built from a single agent's own context.
type ChatRequest struct {
	Model       string    `json:"model"`
	Messages    []Message `json:"messages"`
	MaxTokens   int       `json:"max_tokens,omitempty"`
	Temperature float64   `json:"temperature"`
	Stop        []string  `json:"stop,omitempty"`
	// Agent and Decision say who asks and why; backends use them for
	// accounting and the sim backend for its surrogate.
	Agent    int    `json:"agent"`
	Decision string `json:"decision"`
	// Tier selects the simulated latency tier ("" = default).
	Tier string `json:"tier,omitempty"`
	// Seed makes sampling reproducible; the runtime derives it from the
	// rollout seed, the step and the agent. Zero means unseeded.
	Seed uint64 `json:"seed,omitempty"`
}

// ChatResponse is an LLM's answer.
type ChatResponse struct {
	Text  string
	Usage Usage
	// Traffic is what the call cost on the wire besides its text; zero
	// for the simulated and replayed LLMs.
	Traffic Traffic
}

// Traffic counts what chat calls cost on the wire besides their text:
// the HTTP requests sent, the retries and what caused them, and the time
// spent waiting for a retry or a rate limit. A call's Traffic comes with
// its ChatResponse, or with its error when it failed (see
// llm.CallError); the runtime sums it per episode.
type Traffic struct {
	// Requests is the number of HTTP requests sent.
	Requests int `json:"requests"`
	// Retries is the number of requests sent again after a retryable
	// error.
	Retries int `json:"retries"`
	// RateLimited counts responses with status 429.
	RateLimited int `json:"rate_limited"`
	// ServerErrors counts responses with a 5xx status.
	ServerErrors int `json:"server_errors"`
	// Timeouts counts requests that ran out of time (the per-attempt
	// timeout or a network timeout).
	Timeouts int `json:"timeouts"`
	// WaitSeconds is the time spent waiting before a retry (backoff,
	// Retry-After) or for a requests- or tokens-per-minute limit.
	WaitSeconds float64 `json:"wait_s"`
}

// Add returns the sum of two traffic counts.
func (t Traffic) Add(u Traffic) Traffic {
	t.Requests += u.Requests
	t.Retries += u.Retries
	t.RateLimited += u.RateLimited
	t.ServerErrors += u.ServerErrors
	t.Timeouts += u.Timeouts
	t.WaitSeconds += u.WaitSeconds
	return t
}

// LLM is a chat-completion backend. Implementations must be safe for
// concurrent use.
type LLM interface {
	Chat(ctx context.Context, req ChatRequest) (ChatResponse, error)
}

// Prompter is implemented by envs whose text decisions need a prompt other
// than the default (the agent's Observation.Text followed by the decision
// name). Prompt must use only agent's own context. The env declares it
// with [CapPrompt]; the runtime finds it with [PrompterOf].
type Prompter interface {
	Prompt(agent, decision int) ChatRequest
}

// SimCompletion is a simulator's stand-in for an LLM completion.
type SimCompletion struct {
	Text             string
	PromptTokens     int
	CompletionTokens int
}

// Simulator is implemented by envs that can stand in for an LLM offline:
// given the agent, its decision and the request built from its context, it
// returns what an LLM would plausibly write. The sim backend adds a latency
// model. rng is seeded deterministically by the runtime. The env declares
// it with [CapSimulate]; the runtime finds it with [SimulatorOf].
type Simulator interface {
	Simulate(agent, decision int, req ChatRequest, rng *rand.Rand) (SimCompletion, error)
}

// BaselineProvider is implemented by envs that offer scripted policies,
// named in [EnvSpec].Baselines. The env declares it with [CapBaseline]; the
// runtime finds it with [BaselineProviderOf].
type BaselineProvider interface {
	// Baseline returns the named scripted policy, or an error if the env
	// has none of that name. The policy is bound to this env instance.
	Baseline(name string) (Baseline, error)
}

// Baseline is a scripted joint policy, used for comparison in evaluation.
// It may read the env's internal state; it is not a decentralized policy.
type Baseline interface {
	// Act returns the decision of every agent for the current step. An
	// error (the policy cannot decide, or a plugin host cannot reach it)
	// fails the episode: the runtime counts it as failed and reports the
	// error as its reason, rather than playing on with made-up decisions.
	Act(obs []Observation) ([]int, error)
}
