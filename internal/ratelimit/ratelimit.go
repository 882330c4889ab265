// Package ratelimit is a deterministic, virtual-time rate limiter for a team
// of agents that share one model endpoint: a limit on requests per minute
// and one on tokens per minute, as LLM providers impose them.
//
// Time is a float64 number of seconds on the caller's virtual clock (an
// episode's simulated time), never the wall clock, so the same sequence of
// calls always gets the same start times whatever the machine or the number
// of workers.
//
// # Semantics: FIFO queue, sliding 60-second window
//
// The limiter keeps the start time and token count of every call it has
// admitted. A call issued at time now, asking for n tokens, starts at the
// earliest time t such that
//
//   - t >= now, and t >= the start of every call admitted before it (one
//     queue, first come first served: a call never overtakes an earlier one);
//   - the calls started in the window (t-60, t] number fewer than
//     RequestsPerMinute;
//   - their tokens plus n are at most TokensPerMinute. A call asking for more
//     than TokensPerMinute tokens would never fit; it starts once the window
//     holds no tokens at all, and then goes alone.
//
// A call started at s counts against the window until s+60 exactly. This is
// a sliding window (a rolling log), not a token bucket: over any 60 seconds
// at most RequestsPerMinute calls start and (but for a single oversize call)
// at most TokensPerMinute tokens are charged, with no burst allowance
// beyond that. A limit of 0 means unlimited.
//
// Tokens are charged at start and never corrected: the caller passes what
// the call costs (for replayed completions the real prompt and completion
// token counts are known in advance).
package ratelimit

import (
	"fmt"
	"math"

	"github.com/troupe-dev/troupe/core"
)

// Window is the length, in seconds, of the window both limits count over.
const Window = 60.0

// Config is a team's shared limit, as given in an agentfile table. The
// zero value is unlimited.
type Config struct {
	// RequestsPerMinute is the most calls that may start in any 60 seconds;
	// 0 (the default) means no limit.
	RequestsPerMinute int `toml:"requests_per_minute" json:"requests_per_minute"`
	// TokensPerMinute is the most tokens (prompt plus completion, as the
	// caller counts them) that calls started in any 60 seconds may charge;
	// 0 (the default) means no limit.
	TokensPerMinute int `toml:"tokens_per_minute" json:"tokens_per_minute"`
}

// Validate reports a negative limit as a *core.SettingError keyed by the
// setting's TOML name.
func (c Config) Validate() error {
	if c.RequestsPerMinute < 0 {
		return core.NewSettingError("requests_per_minute", "must be 0 (unlimited) or positive, got %d", c.RequestsPerMinute)
	}
	if c.TokensPerMinute < 0 {
		return core.NewSettingError("tokens_per_minute", "must be 0 (unlimited) or positive, got %d", c.TokensPerMinute)
	}
	return nil
}

// Unlimited reports whether c imposes no limit at all.
func (c Config) Unlimited() bool { return c.RequestsPerMinute == 0 && c.TokensPerMinute == 0 }

// A Limiter admits calls under a Config. It is not safe for concurrent use;
// an episode owns one (see [Limiter.Reset] to reuse it).
type Limiter struct {
	cfg Config
	// starts and tokens of the calls admitted in the window before the
	// latest start, oldest first; head indexes the oldest still kept.
	starts []float64
	tokens []int
	head   int
	// inWindow is the sum of tokens[head:].
	inWindow int
	last     float64 // latest start admitted
	admitted bool    // whether any call was admitted
}

// New returns a Limiter for cfg, which must be valid (see [Config.Validate]);
// New panics otherwise.
func New(cfg Config) *Limiter {
	if err := cfg.Validate(); err != nil {
		panic(fmt.Sprintf("ratelimit.New: %v", err))
	}
	return &Limiter{cfg: cfg}
}

// Config returns the limits l enforces.
func (l *Limiter) Config() Config { return l.cfg }

// Reset forgets every admitted call, as at the start of an episode.
func (l *Limiter) Reset() {
	l.starts, l.tokens = l.starts[:0], l.tokens[:0]
	l.head, l.inWindow, l.last, l.admitted = 0, 0, 0, false
}

// Admit records a call issued at time now (seconds) that charges tokens
// tokens, and returns the time at which it may start (>= now); the caller
// adds its latency to that. See the package documentation for the rule.
// now and tokens must be finite and non-negative; Admit panics otherwise,
// as that is a bug in the caller.
func (l *Limiter) Admit(now float64, tokens int) (start float64) {
	if math.IsNaN(now) || math.IsInf(now, 0) || now < 0 || tokens < 0 {
		panic(fmt.Sprintf("ratelimit.Admit(%v, %d): time and tokens must be finite and non-negative", now, tokens))
	}
	t := now
	if l.admitted && l.last > t {
		t = l.last
	}
	l.expire(t)
	if rpm := l.cfg.RequestsPerMinute; rpm > 0 {
		// The oldest call in the window must leave until fewer than rpm remain.
		if n := len(l.starts) - l.head; n >= rpm {
			t = math.Max(t, l.starts[l.head+n-rpm]+Window)
			l.expire(t)
		}
	}
	if tpm := l.cfg.TokensPerMinute; tpm > 0 {
		need := tokens
		if need > tpm {
			need = tpm // an oversize call waits for an empty window
		}
		for l.inWindow > 0 && l.inWindow+need > tpm {
			t = math.Max(t, l.starts[l.head]+Window)
			l.expire(t)
		}
	}
	if l.cfg.Unlimited() {
		l.last, l.admitted = t, true
		return t
	}
	l.starts = append(l.starts, t)
	l.tokens = append(l.tokens, tokens)
	l.inWindow += tokens
	l.last, l.admitted = t, true
	l.compact()
	return t
}

// expire drops the calls whose window has ended by time t.
func (l *Limiter) expire(t float64) {
	for l.head < len(l.starts) && l.starts[l.head]+Window <= t {
		l.inWindow -= l.tokens[l.head]
		l.head++
	}
}

// compact reclaims the dropped prefix once it is at least half the slice.
func (l *Limiter) compact() {
	if l.head > 32 && l.head*2 >= len(l.starts) {
		n := copy(l.starts, l.starts[l.head:])
		copy(l.tokens, l.tokens[l.head:])
		l.starts, l.tokens = l.starts[:n], l.tokens[:n]
		l.head = 0
	}
}
