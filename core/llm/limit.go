package llm

import (
	"context"
	"math"
	"sync"
	"time"
)

// tokenBucket paces token consumption to a per-minute rate. Unlike
// golang.org/x/time/rate it lets a charge be corrected after the fact in
// both directions (the estimate made before a call is replaced by the
// usage the server reports), and it lets one request larger than the
// bucket through once the bucket is full, leaving a debt that later
// requests wait out. The long-run rate therefore never exceeds the limit.
type tokenBucket struct {
	mu       sync.Mutex
	rate     float64 // tokens per second
	capacity float64 // one second's worth, at least 1
	balance  float64 // may be negative (debt)
	last     time.Time
	now      func() time.Time
}

func newTokenBucket(perMinute int, now func() time.Time) *tokenBucket {
	r := float64(perMinute) / 60
	c := math.Max(1, r)
	return &tokenBucket{rate: r, capacity: c, balance: c, last: now(), now: now}
}

func (b *tokenBucket) refill(t time.Time) {
	if dt := t.Sub(b.last).Seconds(); dt > 0 {
		b.balance = math.Min(b.capacity, b.balance+b.rate*dt)
		b.last = t
	}
}

// reserve takes n tokens now and returns how long the caller must wait
// before it may act.
func (b *tokenBucket) reserve(n int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(b.now())
	need := math.Min(float64(n), b.capacity)
	var wait time.Duration
	if b.balance < need {
		wait = time.Duration((need - b.balance) / b.rate * float64(time.Second))
	}
	b.balance -= float64(n)
	return wait
}

// adjust charges delta more tokens (a negative delta refunds).
func (b *tokenBucket) adjust(delta int) {
	if delta == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refill(b.now())
	b.balance = math.Min(b.capacity, b.balance-float64(delta))
}

// sleepCtx waits d or until ctx is done, whichever comes first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
