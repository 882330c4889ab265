package ratelimit

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/troupe-dev/troupe/core"
)

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		cfg Config
		key string
	}{
		{Config{}, ""},
		{Config{RequestsPerMinute: 60, TokensPerMinute: 1000}, ""},
		{Config{RequestsPerMinute: -1}, "requests_per_minute"},
		{Config{TokensPerMinute: -5}, "tokens_per_minute"},
	} {
		err := c.cfg.Validate()
		if c.key == "" {
			if err != nil {
				t.Errorf("%+v: unexpected error %v", c.cfg, err)
			}
			continue
		}
		var se *core.SettingError
		if !errors.As(err, &se) || se.Key != c.key {
			t.Errorf("%+v: got %v, want a SettingError on %s", c.cfg, err, c.key)
		}
	}
}

func TestUnlimitedStartsAtOnce(t *testing.T) {
	l := New(Config{})
	for i, now := range []float64{0, 0, 0.5, 3, 3} {
		if got := l.Admit(now, 1e6); got != now {
			t.Fatalf("call %d at %v: start %v, want %v", i, now, got, now)
		}
	}
}

func TestRequestsPerMinute(t *testing.T) {
	l := New(Config{RequestsPerMinute: 2})
	want := []float64{0, 0.5, 60, 60.5, 120}
	for i, w := range want {
		if got := l.Admit(float64(i)*0.5, 1); got != w {
			t.Fatalf("call %d: start %v, want %v", i, got, w)
		}
	}
}

func TestTokensPerMinute(t *testing.T) {
	l := New(Config{TokensPerMinute: 100})
	steps := []struct {
		now    float64
		tokens int
		want   float64
	}{
		{0, 60, 0},
		{1, 40, 1},      // exactly fills the window
		{2, 10, 60},     // waits for the first call to leave
		{2, 51, 61},     // 10+51 fit only after the second leaves
		{200, 500, 200}, // oversize, window empty: goes at once
		{201, 1, 260},   // oversize call fills the window for a minute
	}
	for i, s := range steps {
		if got := l.Admit(s.now, s.tokens); got != s.want {
			t.Fatalf("step %d: start %v, want %v", i, got, s.want)
		}
	}
}

func TestFIFO(t *testing.T) {
	l := New(Config{RequestsPerMinute: 1})
	if got := l.Admit(10, 0); got != 10 {
		t.Fatal(got)
	}
	// Issued earlier than the admitted call's start, but queued behind it.
	if got := l.Admit(5, 0); got != 70 {
		t.Fatalf("start %v, want 70", got)
	}
}

func TestResetForgets(t *testing.T) {
	l := New(Config{RequestsPerMinute: 1})
	l.Admit(0, 0)
	l.Reset()
	if got := l.Admit(0, 0); got != 0 {
		t.Fatalf("after Reset: start %v, want 0", got)
	}
}

// reference finds the earliest feasible start by brute force over the
// candidate times, from the full log of admitted calls.
type reference struct {
	cfg    Config
	starts []float64
	tokens []int
}

func (r *reference) admit(now float64, n int) float64 {
	lo := now
	for _, s := range r.starts {
		lo = math.Max(lo, s)
	}
	cands := []float64{lo}
	for _, s := range r.starts {
		if s+Window > lo {
			cands = append(cands, s+Window)
		}
	}
	sort.Float64s(cands)
	for _, t := range cands {
		cnt, tok := 0, 0
		for i, s := range r.starts {
			if s+Window > t && s <= t {
				cnt++
				tok += r.tokens[i]
			}
		}
		if r.cfg.RequestsPerMinute > 0 && cnt >= r.cfg.RequestsPerMinute {
			continue
		}
		if r.cfg.TokensPerMinute > 0 && tok > 0 && tok+min(n, r.cfg.TokensPerMinute) > r.cfg.TokensPerMinute {
			continue
		}
		r.starts = append(r.starts, t)
		r.tokens = append(r.tokens, n)
		return t
	}
	panic("no feasible start")
}

func TestMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		cfg := Config{RequestsPerMinute: rng.IntN(6), TokensPerMinute: rng.IntN(3) * rng.IntN(4000)}
		l, ref := New(cfg), &reference{cfg: cfg}
		now := 0.0
		for i := range 300 {
			now += rng.Float64() * 8
			if rng.IntN(10) == 0 {
				now = math.Max(0, now-20) // issued out of order
			}
			n := rng.IntN(2500)
			got, want := l.Admit(now, n), ref.admit(now, n)
			if got != want {
				t.Fatalf("trial %d %+v call %d (now %v, %d tokens): start %v, brute force %v", trial, cfg, i, now, n, got, want)
			}
		}
	}
}

// TestWindowInvariant checks the limits hold over every window.
func TestWindowInvariant(t *testing.T) {
	cfg := Config{RequestsPerMinute: 7, TokensPerMinute: 5000}
	l := New(cfg)
	rng := rand.New(rand.NewPCG(3, 4))
	var starts []float64
	var toks []int
	now := 0.0
	for range 2000 {
		now += rng.ExpFloat64() * 3
		n := rng.IntN(1500)
		starts = append(starts, l.Admit(now, n))
		toks = append(toks, n)
	}
	for i := range starts {
		cnt, tok := 0, 0
		for j := i; j < len(starts) && starts[j] < starts[i]+Window; j++ {
			cnt++
			tok += toks[j]
		}
		if cnt > cfg.RequestsPerMinute || tok > cfg.TokensPerMinute {
			t.Fatalf("window from %v holds %d calls, %d tokens", starts[i], cnt, tok)
		}
	}
}

func TestAdmitPanicsOnBadInput(t *testing.T) {
	for _, c := range []struct {
		now float64
		n   int
	}{{math.NaN(), 1}, {-1, 1}, {0, -1}, {math.Inf(1), 0}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Admit(%v, %d) did not panic", c.now, c.n)
				}
			}()
			New(Config{}).Admit(c.now, c.n)
		}()
	}
}

func TestConfigTOML(t *testing.T) {
	var c Config
	if _, err := toml.Decode("requests_per_minute = 30\ntokens_per_minute = 90000\n", &c); err != nil {
		t.Fatal(err)
	}
	if c != (Config{RequestsPerMinute: 30, TokensPerMinute: 90000}) {
		t.Errorf("decoded %+v", c)
	}
}
