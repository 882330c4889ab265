package llm

import (
	"sync"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// totals counts what a backend did for one agent (or for all agents).
type totals struct {
	// Calls is the number of Chat calls that returned text.
	Calls int `json:"calls"`
	// Failures is the number of Chat calls that returned an error
	// (including calls ended by cancellation).
	Failures int `json:"failures"`
	// Retries is the number of extra HTTP attempts made after a retryable
	// error, over successful and failed calls alike.
	Retries int `json:"retries"`
	// PromptTokens and CompletionTokens sum the Usage of successful calls.
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	// Latency sums the Usage.Latency of successful calls.
	Latency time.Duration `json:"latency_ns"`
	// EstimatedUsage counts successful calls whose token counts were
	// estimated (about 4 characters a token) because the server sent no
	// usage fields, or the simulator reported none.
	EstimatedUsage int `json:"estimated_usage,omitempty"`
}

// Tokens returns PromptTokens + CompletionTokens.
func (t totals) Tokens() int { return t.PromptTokens + t.CompletionTokens }

func (t *totals) add(u totals) {
	t.Calls += u.Calls
	t.Failures += u.Failures
	t.Retries += u.Retries
	t.PromptTokens += u.PromptTokens
	t.CompletionTokens += u.CompletionTokens
	t.Latency += u.Latency
	t.EstimatedUsage += u.EstimatedUsage
}

// accounting keeps running per-agent and overall totals. It is safe for
// concurrent use; the zero value is ready to use. The openai and sim
// backends each own one; the runtime keeps its own per-episode sums from
// the Usage each call returns.
type accounting struct {
	mu      sync.Mutex
	total   totals
	byAgent map[int]*totals
}

// RecordCall counts one successful call of agent with its usage and the
// number of retries it needed. estimated marks usage that was estimated.
func (a *accounting) RecordCall(agent int, u core.Usage, retries int, estimated bool) {
	d := totals{Calls: 1, Retries: retries, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Latency: u.Latency}
	if estimated {
		d.EstimatedUsage = 1
	}
	a.record(agent, d)
}

// RecordFailure counts one failed call of agent after the given retries.
func (a *accounting) RecordFailure(agent int, retries int) {
	a.record(agent, totals{Failures: 1, Retries: retries})
}

func (a *accounting) record(agent int, d totals) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byAgent == nil {
		a.byAgent = map[int]*totals{}
	}
	t := a.byAgent[agent]
	if t == nil {
		t = &totals{}
		a.byAgent[agent] = t
	}
	t.add(d)
	a.total.add(d)
}

// Total returns the totals over all agents.
func (a *accounting) Total() totals {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

// Agent returns the totals of one agent (zero if it made no call).
func (a *accounting) Agent(agent int) totals {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.byAgent[agent]; t != nil {
		return *t
	}
	return totals{}
}

// estimateTokens approximates a text's token count at four characters a
// token (rounded up), the usual rule of thumb for English with BPE
// tokenizers. It is used only when no real count is available.
func estimateTokens(s string) int { return (len(s) + 3) / 4 }

// EstimatePromptTokens approximates the prompt tokens of a request: each
// message's content plus a few tokens of chat-template framing. The
// backends use it when no real count is available, and the runtime to
// fit a call into what is left of a token budget.
func EstimatePromptTokens(msgs []core.Message) int {
	n := 3
	for _, m := range msgs {
		n += 4 + estimateTokens(m.Content)
	}
	return n
}
