package llm

import (
	"sort"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/core"
)

// Totals counts what a backend did for one agent (or for all agents).
type Totals struct {
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
func (t Totals) Tokens() int { return t.PromptTokens + t.CompletionTokens }

// Sub returns t − u field by field, e.g. the calls made during one
// iteration from two snapshots.
func (t Totals) Sub(u Totals) Totals {
	return Totals{
		Calls:            t.Calls - u.Calls,
		Failures:         t.Failures - u.Failures,
		Retries:          t.Retries - u.Retries,
		PromptTokens:     t.PromptTokens - u.PromptTokens,
		CompletionTokens: t.CompletionTokens - u.CompletionTokens,
		Latency:          t.Latency - u.Latency,
		EstimatedUsage:   t.EstimatedUsage - u.EstimatedUsage,
	}
}

func (t *Totals) add(u Totals) {
	t.Calls += u.Calls
	t.Failures += u.Failures
	t.Retries += u.Retries
	t.PromptTokens += u.PromptTokens
	t.CompletionTokens += u.CompletionTokens
	t.Latency += u.Latency
	t.EstimatedUsage += u.EstimatedUsage
}

// Accounting keeps running per-agent and overall Totals. It is safe for
// concurrent use; the zero value is ready to use. Every backend of this
// package owns one (see OpenAI.Accounting, Sim.Accounting); the runtime can
// keep its own per-episode sums from the Usage each call returns.
type Accounting struct {
	mu      sync.Mutex
	total   Totals
	byAgent map[int]*Totals
}

// RecordCall counts one successful call of agent with its usage and the
// number of retries it needed. estimated marks usage that was estimated.
func (a *Accounting) RecordCall(agent int, u core.Usage, retries int, estimated bool) {
	d := Totals{Calls: 1, Retries: retries, PromptTokens: u.PromptTokens, CompletionTokens: u.CompletionTokens, Latency: u.Latency}
	if estimated {
		d.EstimatedUsage = 1
	}
	a.record(agent, d)
}

// RecordFailure counts one failed call of agent after the given retries.
func (a *Accounting) RecordFailure(agent int, retries int) {
	a.record(agent, Totals{Failures: 1, Retries: retries})
}

func (a *Accounting) record(agent int, d Totals) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byAgent == nil {
		a.byAgent = map[int]*Totals{}
	}
	t := a.byAgent[agent]
	if t == nil {
		t = &Totals{}
		a.byAgent[agent] = t
	}
	t.add(d)
	a.total.add(d)
}

// Total returns the totals over all agents.
func (a *Accounting) Total() Totals {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.total
}

// Agent returns the totals of one agent (zero if it made no call).
func (a *Accounting) Agent(agent int) Totals {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t := a.byAgent[agent]; t != nil {
		return *t
	}
	return Totals{}
}

// Agents returns a copy of the per-agent totals, by agent index.
func (a *Accounting) Agents() map[int]Totals {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[int]Totals, len(a.byAgent))
	for i, t := range a.byAgent {
		out[i] = *t
	}
	return out
}

// AgentIDs returns the indices of the agents that made calls, sorted.
func (a *Accounting) AgentIDs() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	ids := make([]int, 0, len(a.byAgent))
	for i := range a.byAgent {
		ids = append(ids, i)
	}
	sort.Ints(ids)
	return ids
}

// estimateTokens approximates a text's token count at four characters a
// token (rounded up), the usual rule of thumb for English with BPE
// tokenizers. It is used only when no real count is available.
func estimateTokens(s string) int { return (len(s) + 3) / 4 }

// estimatePromptTokens approximates the prompt tokens of a request: each
// message's content plus a few tokens of chat-template framing.
func estimatePromptTokens(msgs []core.Message) int {
	n := 3
	for _, m := range msgs {
		n += 4 + estimateTokens(m.Content)
	}
	return n
}
