package llm

import (
	"strings"
	"sync"
	"testing"
)

func TestBudgetTotal(t *testing.T) {
	tr := Budget{MaxTokens: 100}.Tracker()
	if tr.Charge(0, 60) || tr.Charge(1, 39) {
		t.Fatal("exceeded below the limit")
	}
	if !tr.Charge(1, 1) { // 100 reached
		t.Fatal("not exceeded at the limit")
	}
	if !tr.Charge(0, 0) || !tr.Exceeded() {
		t.Fatal("exceeded must stick")
	}
	if tr.Used() != 100 || tr.UsedBy(1) != 40 {
		t.Errorf("used %d, agent 1 %d", tr.Used(), tr.UsedBy(1))
	}
}

func TestBudgetPerAgent(t *testing.T) {
	tr := Budget{MaxTokensPerAgent: 50}.Tracker()
	for a := range 4 {
		if tr.Charge(a, 49) {
			t.Fatalf("agent %d exceeded at 49", a)
		}
	}
	if !tr.Charge(2, 5) {
		t.Fatal("agent 2 at 54 not exceeded")
	}
}

func TestBudgetUnlimitedAndConcurrent(t *testing.T) {
	b := Budget{}
	if !b.Unlimited() {
		t.Fatal("zero budget should be unlimited")
	}
	tr := b.Tracker()
	var wg sync.WaitGroup
	for a := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if tr.Charge(a, 3) {
					t.Error("unlimited budget exceeded")
					return
				}
			}
		}()
	}
	wg.Wait()
	if tr.Used() != 8*1000*3 || tr.UsedBy(5) != 3000 {
		t.Errorf("used %d / %d", tr.Used(), tr.UsedBy(5))
	}
	// Concurrent charges cross the limit exactly once for everyone.
	tr = Budget{MaxTokens: 5000}.Tracker()
	var mu sync.Mutex
	firstExceeded := 0
	for a := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 1000 {
				if tr.Charge(a, 1) {
					mu.Lock()
					if firstExceeded == 0 {
						firstExceeded = tr.Used()
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if !tr.Exceeded() || firstExceeded < 5000 || tr.Used() != 8000 {
		t.Errorf("exceeded %v at %d, used %d", tr.Exceeded(), firstExceeded, tr.Used())
	}
	if err := (Budget{MaxTokens: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "max_tokens") {
		t.Errorf("negative max_tokens: %v", err)
	}
	if err := (Budget{MaxTokensPerAgent: -1}).Validate(); err == nil || !strings.Contains(err.Error(), "max_tokens_per_agent") {
		t.Errorf("negative per agent: %v", err)
	}
}
