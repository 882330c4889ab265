package llm

import (
	"fmt"
	"sync"
)

// Budget is a hard token budget for one episode; zero fields mean no limit.
type Budget struct {
	// MaxTokens caps the tokens (prompt + completion) of all agents.
	MaxTokens int `toml:"max_tokens" json:"max_tokens,omitempty"`
	// MaxTokensPerAgent caps the tokens of each agent.
	MaxTokensPerAgent int `toml:"max_tokens_per_agent" json:"max_tokens_per_agent,omitempty"`
}

// Validate reports negative limits.
func (b Budget) Validate() error {
	if b.MaxTokens < 0 {
		return fmt.Errorf("budget: max_tokens must be >= 0, got %d", b.MaxTokens)
	}
	if b.MaxTokensPerAgent < 0 {
		return fmt.Errorf("budget: max_tokens_per_agent must be >= 0, got %d", b.MaxTokensPerAgent)
	}
	return nil
}

// Unlimited reports whether the budget sets no limit.
func (b Budget) Unlimited() bool { return b.MaxTokens <= 0 && b.MaxTokensPerAgent <= 0 }

// Tracker returns a fresh tracker for one episode.
func (b Budget) Tracker() *BudgetTracker { return &BudgetTracker{b: b, byAgent: map[int]int{}} }

// BudgetTracker charges tokens against a Budget. It is safe for concurrent
// use. Once exceeded it stays exceeded.
type BudgetTracker struct {
	b        Budget
	mu       sync.Mutex
	used     int
	byAgent  map[int]int
	exceeded bool
}

// Charge adds tokens spent by agent and reports whether the budget is now
// exhausted: the total has reached MaxTokens or the agent's share has
// reached MaxTokensPerAgent. Tokens are charged after they were spent, so
// the last call may overshoot the limit; the runtime then stops the
// episode (budget_stopped) and keeps the partial result.
func (t *BudgetTracker) Charge(agent, tokens int) (exceeded bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tokens = max(tokens, 0)
	t.used += tokens
	t.byAgent[agent] += tokens
	if (t.b.MaxTokens > 0 && t.used >= t.b.MaxTokens) ||
		(t.b.MaxTokensPerAgent > 0 && t.byAgent[agent] >= t.b.MaxTokensPerAgent) {
		t.exceeded = true
	}
	return t.exceeded
}

// Exceeded reports whether any Charge has exhausted the budget.
func (t *BudgetTracker) Exceeded() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.exceeded
}

// Used returns the tokens charged so far over all agents.
func (t *BudgetTracker) Used() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.used
}

// UsedBy returns the tokens charged to agent.
func (t *BudgetTracker) UsedBy(agent int) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byAgent[agent]
}
