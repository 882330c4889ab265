package llm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// newTestOpenAI returns a backend against fs with fast backoff, no key and
// the default settings, changed by edit if it is not nil.
func newTestOpenAI(t testing.TB, fs *fakeServer, edit func(*Config)) *openAIClient {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Backend, cfg.Model, cfg.APIKeyEnv = BackendOpenAI, "test-model", "TROUPE_TEST_NO_SUCH_KEY"
	if edit != nil {
		edit(&cfg)
	}
	cfg.BaseURL = fs.URL + "/v1"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	o, err := newOpenAI(cfg)
	if err != nil {
		t.Fatal(err)
	}
	o.backoffBase, o.backoffMax = time.Millisecond, 5*time.Millisecond
	t.Cleanup(func() { o.Close() })
	return o
}

func userReq(agent int, text string) core.ChatRequest {
	return core.ChatRequest{Messages: []core.Message{{Role: "user", Content: text}}, MaxTokens: 32, Agent: agent, Decision: "draft"}
}

func TestOpenAISendsRequestAndReturnsUsage(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	t.Setenv("TROUPE_TEST_KEY", key)
	var got chatRequest
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		var err error
		if got, err = decodeChat(r); err != nil {
			writeError(w, 400, err.Error())
			return
		}
		writeCompletion(w, "hello there", 11, 7)
	})
	o := newTestOpenAI(t, fs, func(c *Config) { c.APIKeyEnv, c.Model = "TROUPE_TEST_KEY", "cfg-model" })
	req := core.ChatRequest{
		Messages:  []core.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}},
		MaxTokens: 64, Temperature: 0, Seed: 1<<40 + 5, Agent: 3, Decision: "draft",
	}
	resp, err := o.Chat(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "hello there" {
		t.Errorf("text %q", resp.Text)
	}
	if resp.Usage.PromptTokens != 11 || resp.Usage.CompletionTokens != 7 || resp.Usage.Backend != "openai" || resp.Usage.Latency <= 0 {
		t.Errorf("usage %+v", resp.Usage)
	}
	if got.Model != "cfg-model" || len(got.Messages) != 2 || got.Messages[1].Content != "hi" || got.MaxTokens != 64 {
		t.Errorf("server saw %+v", got)
	}
	if got.Temperature == nil || *got.Temperature <= 0 || *got.Temperature > 1e-40 {
		t.Errorf("temperature 0 should be sent as the smallest positive float, got %v", got.Temperature)
	}
	if got.Seed == nil || *got.Seed != int64((1<<40+5)%(1<<31)) {
		t.Errorf("seed %v", got.Seed)
	}
	if fs.auth[0] != "Bearer "+key {
		t.Errorf("authorization header %q", fs.auth[0])
	}
	// The request's own model wins over the configured one.
	req.Model = "req-model"
	if _, err := o.Chat(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if got.Model != "req-model" {
		t.Errorf("model %q, want req-model", got.Model)
	}
	if tot := o.accounting().Agent(3); tot.Calls != 2 || tot.PromptTokens != 22 || tot.CompletionTokens != 14 || tot.Retries != 0 {
		t.Errorf("accounting %+v", tot)
	}
}

func TestOpenAIUsageAddsUp(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		req, _ := decodeChat(r)
		// Usage derived from the request so the test can recompute it.
		var p int
		fmt.Sscanf(req.Messages[0].Content, "p=%d", &p)
		writeCompletion(w, "ok", p, p%7+1)
	})
	o := newTestOpenAI(t, fs, func(c *Config) { c.MaxConcurrency = 8 })
	const calls, agents = 96, 4
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sum core.Usage
	want := map[int]totals{}
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := 10 + i*13%101
			resp, err := o.Chat(context.Background(), userReq(i%agents, fmt.Sprintf("p=%d", p)))
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			sum = sum.Add(resp.Usage)
			w := want[i%agents]
			w.Calls++
			w.PromptTokens += p
			w.CompletionTokens += p%7 + 1
			want[i%agents] = w
		}()
	}
	wg.Wait()
	tot := o.accounting().Total()
	var wp, wc int
	for a := range agents {
		g := o.accounting().Agent(a)
		if g.Calls != want[a].Calls || g.PromptTokens != want[a].PromptTokens || g.CompletionTokens != want[a].CompletionTokens {
			t.Errorf("agent %d: got %+v, want %+v", a, g, want[a])
		}
		wp += want[a].PromptTokens
		wc += want[a].CompletionTokens
	}
	if tot.Calls != calls || tot.PromptTokens != wp || tot.CompletionTokens != wc || tot.Failures != 0 {
		t.Errorf("total %+v, want %d calls %d+%d tokens", tot, calls, wp, wc)
	}
	if sum.PromptTokens != wp || sum.CompletionTokens != wc || tot.Latency != sum.Latency {
		t.Errorf("sum of responses %+v differs from accounting %+v", sum, tot)
	}
}

func TestOpenAIRetriesServerErrorsThenSucceeds(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		switch n {
		case 1:
			writeError(w, 500, "boom")
		case 2:
			w.WriteHeader(503) // not JSON at all
			fmt.Fprint(w, "<html>unavailable</html>")
		default:
			writeCompletion(w, "fine", 3, 2)
		}
	})
	var logs bytes.Buffer
	o := newTestOpenAI(t, fs, func(c *Config) { c.MaxRetries, c.Logger = 3, slog.New(slog.NewTextHandler(&logs, nil)) })
	resp, err := o.Chat(context.Background(), userReq(0, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "llm call retrying"); n != 2 || !strings.Contains(logs.String(), "status=503") {
		t.Errorf("want 2 retry log records, got:\n%s", logs.String())
	}
	if resp.Text != "fine" || fs.requests() != 3 {
		t.Errorf("text %q after %d requests, want fine after 3", resp.Text, fs.requests())
	}
	if tot := o.accounting().Total(); tot.Retries != 2 || tot.Calls != 1 || tot.Failures != 0 {
		t.Errorf("accounting %+v", tot)
	}
	if tr := resp.Traffic; tr.Requests != 3 || tr.Retries != 2 || tr.ServerErrors != 2 || tr.RateLimited != 0 || tr.Timeouts != 0 || tr.WaitSeconds <= 0 {
		t.Errorf("traffic %+v, want 3 requests, 2 retries, 2 server errors and some waiting", tr)
	}
}

func TestOpenAIRetryCapOn429(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("retry-after-ms", "2")
		writeError(w, 429, "rate limited")
	})
	o := newTestOpenAI(t, fs, func(c *Config) { c.MaxRetries = 3 })
	_, err := o.Chat(context.Background(), userReq(1, "x"))
	var ce *CallError
	if !errors.As(err, &ce) {
		t.Fatalf("want *CallError, got %v", err)
	}
	if fs.requests() != 4 || ce.Attempts != 4 || ce.Status != 429 || !ce.Retryable {
		t.Errorf("requests %d, error %+v", fs.requests(), ce)
	}
	for _, s := range []string{"429", "rate limited", fs.URL + "/v1/chat/completions", "gave up after 4 attempts"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if tot := o.accounting().Agent(1); tot.Failures != 1 || tot.Retries != 3 || tot.Calls != 0 {
		t.Errorf("accounting %+v", tot)
	}
	if tr := ce.Traffic; tr.Requests != 4 || tr.Retries != 3 || tr.RateLimited != 4 || tr.ServerErrors != 0 || tr.WaitSeconds <= 0 {
		t.Errorf("traffic of the failed call %+v, want 4 requests, 3 retries, 4 rate-limited", tr)
	}

	// No retries at all when MaxRetries = 0.
	fs2 := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeError(w, 429, "rate limited") })
	o2 := newTestOpenAI(t, fs2, func(c *Config) { c.MaxRetries = 0 })
	if _, err := o2.Chat(context.Background(), userReq(0, "x")); err == nil || fs2.requests() != 1 {
		t.Errorf("MaxRetries 0: err %v after %d requests, want error after 1", err, fs2.requests())
	}
}

func TestOpenAIHonoursRetryAfterSeconds(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n == 1 {
			w.Header().Set("Retry-After", "1")
			writeError(w, 429, "slow down")
			return
		}
		writeCompletion(w, "ok", 1, 1)
	})
	o := newTestOpenAI(t, fs, nil)
	resp, err := o.Chat(context.Background(), userReq(0, "x"))
	if err != nil {
		t.Fatal(err)
	}
	at := fs.arrivals()
	if gap := at[1].Sub(at[0]); gap < time.Second || gap > 1500*time.Millisecond {
		t.Errorf("retry came %v after the 429, want about 1s (Retry-After: 1)", gap)
	}
	if tr := resp.Traffic; tr.RateLimited != 1 || tr.Retries != 1 || tr.WaitSeconds < 1 || tr.WaitSeconds > 1.5 {
		t.Errorf("traffic %+v, want one 429 and about 1 s of waiting", tr)
	}
}

func TestOpenAINonRetryable4xxFailsAtOnce(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		writeError(w, 400, "max_tokens is too large")
	})
	o := newTestOpenAI(t, fs, nil)
	_, err := o.Chat(context.Background(), userReq(0, "x"))
	if err == nil || fs.requests() != 1 {
		t.Fatalf("err %v after %d requests", err, fs.requests())
	}
	for _, s := range []string{"400 Bad Request", "max_tokens is too large", "POST " + fs.URL + "/v1/chat/completions", "not retried"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

func TestOpenAIPerCallTimeoutRetriesHungResponses(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done() // hang until the client gives up
	})
	o := newTestOpenAI(t, fs, func(c *Config) { c.Timeout, c.MaxRetries = 80*time.Millisecond, 2 })
	start := time.Now()
	_, err := o.Chat(context.Background(), userReq(0, "x"))
	el := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "timed out after 80ms") || !strings.Contains(err.Error(), "3 attempts") {
		t.Fatalf("error %v", err)
	}
	if fs.requests() != 3 {
		t.Errorf("%d requests, want 3", fs.requests())
	}
	var ce *CallError
	if !errors.As(err, &ce) || ce.Traffic.Timeouts != 3 || ce.Traffic.Requests != 3 || ce.Traffic.Retries != 2 {
		t.Errorf("traffic of the timed-out call: %+v, want 3 timeouts in 3 requests", ce)
	}
	if el < 240*time.Millisecond || (testenv.Timing() && el > 1500*time.Millisecond) {
		t.Errorf("took %v, want about 3×80ms", el)
	}
}

func TestOpenAIMalformedJSONIsNotRetried(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"choices": [oops`)
	})
	o := newTestOpenAI(t, fs, nil)
	_, err := o.Chat(context.Background(), userReq(0, "x"))
	if err == nil || !strings.Contains(err.Error(), "malformed JSON") || fs.requests() != 1 {
		t.Fatalf("err %v after %d requests", err, fs.requests())
	}
	fs2 := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices": []}`)
	})
	o2 := newTestOpenAI(t, fs2, nil)
	if _, err := o2.Chat(context.Background(), userReq(0, "x")); err == nil || !strings.Contains(err.Error(), "no choices") {
		t.Fatalf("empty choices: err %v", err)
	}
}

func TestOpenAIRetriesDroppedConnections(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		if n <= 2 {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // drop the connection without a response
			}
			return
		}
		writeCompletion(w, "back", 2, 2)
	})
	o := newTestOpenAI(t, fs, nil)
	resp, err := o.Chat(context.Background(), userReq(0, "x"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != "back" || fs.requests() != 3 || o.accounting().Total().Retries != 2 {
		t.Errorf("text %q, %d requests, accounting %+v", resp.Text, fs.requests(), o.accounting().Total())
	}
}

func TestOpenAIEstimatesMissingUsage(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"twelve chars"}}]}`)
	})
	o := newTestOpenAI(t, fs, nil)
	resp, err := o.Chat(context.Background(), userReq(0, "abcdefgh"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage.CompletionTokens != 3 || resp.Usage.PromptTokens != 3+4+2 {
		t.Errorf("usage %+v, want estimates 9 + 3", resp.Usage)
	}
	if o.accounting().Total().EstimatedUsage != 1 {
		t.Errorf("accounting %+v", o.accounting().Total())
	}
}

func TestOpenAICancellationEndsInFlightAndQueuedCalls(t *testing.T) {
	released := make(chan struct{})
	var ended atomic.Int64
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		defer ended.Add(1)
		select {
		case <-r.Context().Done():
		case <-released:
		}
	})
	defer close(released)
	o := newTestOpenAI(t, fs, func(c *Config) { c.MaxConcurrency = 8 })
	ctx, cancel := context.WithCancel(context.Background())
	const calls = 20 // 8 in flight, 12 queued
	errs := make(chan error, calls)
	for i := range calls {
		go func() {
			_, err := o.Chat(ctx, userReq(i, "x"))
			errs <- err
		}()
	}
	waitFor(t, func() bool { return fs.requests() == 8 })
	start := time.Now()
	cancel()
	for range calls {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("want context.Canceled, got %v", err)
		}
	}
	if el := time.Since(start); testenv.Timing() && el > 500*time.Millisecond {
		t.Errorf("calls took %v to end after cancel", el)
	}
	// Every server handler sees its request go away.
	waitFor(t, func() bool { return ended.Load() == int64(fs.requests()) })
	if tot := o.accounting().Total(); tot.Failures != calls {
		t.Errorf("accounting %+v", tot)
	}
}

func TestOpenAICloseEndsCallsAndWaits(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	o := newTestOpenAI(t, fs, func(c *Config) { c.MaxConcurrency = 4 })
	errs := make(chan error, 6)
	for i := range 6 {
		go func() {
			_, err := o.Chat(context.Background(), userReq(i, "x"))
			errs <- err
		}()
	}
	waitFor(t, func() bool { return fs.requests() == 4 })
	o.Close()
	// Close waited, so the four calls in flight have already failed (a
	// call records its failure before it returns). The channel cannot show
	// this: a goroutine sends after Chat has returned, and the two queued
	// calls may not even have begun when Close was called.
	if f := o.accounting().Total().Failures; f < 4 {
		t.Fatalf("Close returned before the calls in flight ended: %d failures recorded", f)
	}
	for range 6 {
		select {
		case err := <-errs:
			if !errors.Is(err, ErrClosed) {
				t.Errorf("want ErrClosed, got %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a call did not end after Close")
		}
	}
	if _, err := o.Chat(context.Background(), userReq(0, "x")); !errors.Is(err, ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
}

func TestOpenAIKeyNeverInErrorsOrStrings(t *testing.T) {
	const key = "sk-SECRET-do-not-leak-42"
	t.Setenv("TROUPE_TEST_KEY", key)
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		switch n {
		case 1: // JSON error echoing the key, as some servers do
			writeError(w, 401, "Incorrect API key provided: "+auth)
		default: // non-JSON 5xx body echoing it
			w.WriteHeader(502)
			fmt.Fprint(w, "bad gateway for "+auth)
		}
	})
	var logs bytes.Buffer
	o := newTestOpenAI(t, fs, func(c *Config) {
		c.APIKeyEnv, c.MaxRetries, c.Logger = "TROUPE_TEST_KEY", 1, slog.New(slog.NewJSONHandler(&logs, nil))
	})
	_, err1 := o.Chat(context.Background(), userReq(0, "x"))
	_, err2 := o.Chat(context.Background(), userReq(0, "x"))
	if err1 == nil || err2 == nil {
		t.Fatal("want errors")
	}
	if !strings.Contains(logs.String(), "bad gateway for Bearer [redacted]") {
		t.Errorf("retry log should show the redacted body: %s", logs.String())
	}
	if fs.auth[0] != "Bearer "+key {
		t.Fatalf("key not sent: %q", fs.auth[0])
	}
	for _, s := range []string{err1.Error(), err2.Error(), logs.String(), fmt.Sprintf("%v %+v %#v %s", o, o, o, o), fmt.Sprintf("%+v %#v", o.cfg, o.cfg)} {
		if strings.Contains(s, key) {
			t.Errorf("key leaked in %q", s)
		}
	}
	if !strings.Contains(err1.Error(), "401") || !strings.Contains(err1.Error(), "[redacted]") {
		t.Errorf("error %q should name the status and show the redaction", err1)
	}
	// The OpenAI endpoint itself needs a key; the error names the variable only.
	t.Setenv("TROUPE_TEST_EMPTY", "")
	hosted := DefaultConfig()
	hosted.Backend, hosted.APIKeyEnv = BackendOpenAI, "TROUPE_TEST_EMPTY"
	if _, err := New(hosted); err == nil || !strings.Contains(err.Error(), "$TROUPE_TEST_EMPTY") {
		t.Errorf("missing key: %v", err)
	}
}

func TestOpenAIRequestsPerMinute(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeCompletion(w, "ok", 1, 1) })
	const rpm, calls = 1200, 50 // 20 requests/s for ~2.5 s
	o := newTestOpenAI(t, fs, func(c *Config) { c.RequestsPerMinute, c.MaxConcurrency = rpm, 16 })
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := o.Chat(context.Background(), userReq(i, "x")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	at := fs.arrivals()
	got := float64(len(at)-1) / at[len(at)-1].Sub(at[0]).Seconds()
	if want := float64(rpm) / 60; math.Abs(got-want)/want > 0.10 {
		t.Errorf("measured %.2f requests/s, want %.2f ±10%%", got, want)
	}
}

func TestOpenAITokensPerMinute(t *testing.T) {
	const extra = 20 // each call uses 20 tokens more than estimated
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		req, _ := decodeChat(r)
		writeCompletion(w, "ok", EstimatePromptTokens(req.Messages), req.MaxTokens+extra)
	})
	const tpm, calls = 60000, 15 // 1000 tokens/s, bucket of 1000
	o := newTestOpenAI(t, fs, func(c *Config) { c.TokensPerMinute, c.MaxConcurrency = tpm, 1 })
	req := userReq(0, "some prompt text")
	req.MaxTokens = 180
	est := EstimatePromptTokens(req.Messages) + req.MaxTokens
	for range calls {
		if _, err := o.Chat(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	at := fs.arrivals()
	got := at[len(at)-1].Sub(at[0]).Seconds()
	// Call k (from 0) may start once k·(est+extra) + est tokens fit in the
	// 1000-token bucket plus 1000 tokens/s.
	want := (float64((calls-1)*(est+extra)+est) - 1000) / 1000
	if math.Abs(got-want)/want > 0.10 {
		t.Errorf("last call started after %.2fs, want %.2fs ±10%%", got, want)
	}
	if tot := o.accounting().Total(); tot.Tokens() != calls*(est+extra) {
		t.Errorf("accounted %d tokens, want %d", tot.Tokens(), calls*(est+extra))
	}
}

func TestOpenAIReusesConnections(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) {
		time.Sleep(2 * time.Millisecond)
		writeCompletion(w, strings.Repeat("x", 5000), 1, 1) // larger than one read
	})
	o := newTestOpenAI(t, fs, func(c *Config) { c.MaxConcurrency = 8 })
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := o.Chat(context.Background(), userReq(i, "x")); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if c := fs.conns.Load(); c > 8 {
		t.Errorf("200 calls with max_concurrency 8 opened %d connections, want <= 8", c)
	}
}

func TestOpenAIBadRequestsAndConfig(t *testing.T) {
	fs := newFakeServer(t, func(n int, w http.ResponseWriter, r *http.Request) { writeCompletion(w, "ok", 1, 1) })
	o := newTestOpenAI(t, fs, nil)
	bad := map[string]core.ChatRequest{
		"no messages": {Agent: 1, Decision: "d"},
		`role "tool"`: {Messages: []core.Message{{Role: "tool", Content: "x"}}},
		"temperature": {Messages: []core.Message{{Role: "user", Content: "x"}}, Temperature: 3},
		"max_tokens":  {Messages: []core.Message{{Role: "user", Content: "x"}}, MaxTokens: -1},
	}
	for want, req := range bad {
		if _, err := o.Chat(context.Background(), req); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want error naming %q, got %v", want, err)
		}
	}
	if fs.requests() != 0 {
		t.Errorf("bad requests reached the server")
	}
	t.Setenv("TROUPE_TEST_NO_SUCH_KEY", "")
	cfg := DefaultConfig()
	cfg.Backend, cfg.Model, cfg.BaseURL, cfg.APIKeyEnv = BackendOpenAI, "", fs.URL+"/v1", "TROUPE_TEST_NO_SUCH_KEY"
	noModel, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer noModel.Close()
	if _, err := noModel.Chat(context.Background(), userReq(0, "x")); err == nil || !strings.Contains(err.Error(), "no model") {
		t.Errorf("no model: %v", err)
	}
	for key, edit := range map[string]func(*Config){
		"max_concurrency":     func(c *Config) { c.MaxConcurrency = 0 },
		"requests_per_minute": func(c *Config) { c.RequestsPerMinute = -5 },
		"tokens_per_minute":   func(c *Config) { c.TokensPerMinute = -5 },
		"max_retries":         func(c *Config) { c.MaxRetries = -1 },
		"timeout":             func(c *Config) { c.Timeout = 0 },
		"base_url":            func(c *Config) { c.BaseURL = "localhost:8000" },
	} {
		c := cfg
		edit(&c)
		if _, err := New(c); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("config %+v: want error naming %s, got %v", c, key, err)
		}
	}
	d := DefaultConfig()
	if d.Backend != BackendSim || d.BaseURL != "" || d.APIKeyEnv != "OPENAI_API_KEY" || d.MaxConcurrency != 16 || d.MaxRetries != 5 ||
		d.Timeout != 60*time.Second || backoffBase != 500*time.Millisecond || backoffMax != 30*time.Second {
		t.Errorf("defaults %+v", d)
	}
	// Empty base_url and api_key_env mean the hosted API and its variable.
	t.Setenv("OPENAI_API_KEY", "sk-test")
	d.BaseURL, d.APIKeyEnv = "", ""
	hosted, err := newOpenAI(d)
	if err != nil {
		t.Fatal(err)
	}
	defer hosted.Close()
	if hosted.endpoint != "https://api.openai.com/v1/chat/completions" || hosted.key != "sk-test" {
		t.Errorf("empty base_url and api_key_env: endpoint %s, key read %v", hosted.endpoint, hosted.key != "")
	}
}

func TestBuildRequestForReasoningModels(t *testing.T) {
	o := &openAIClient{cfg: Config{Model: "o3-mini"}}
	r, err := o.buildRequest(core.ChatRequest{Messages: []core.Message{{Role: "user", Content: "x"}}, MaxTokens: 100, Temperature: 0.7})
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxTokens != 0 || r.MaxCompletionTokens != 100 || r.Temperature != 0 {
		t.Errorf("reasoning request %+v", r)
	}
	o.cfg.Model = "llama3"
	r, _ = o.buildRequest(core.ChatRequest{Messages: []core.Message{{Role: "user", Content: "x"}}, MaxTokens: 100, Temperature: 0.7})
	if r.MaxTokens != 100 || r.MaxCompletionTokens != 0 || r.Temperature != 0.7 {
		t.Errorf("plain request %+v", r)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		hdr  map[string]string
		want time.Duration
	}{
		{map[string]string{"Retry-After": "3"}, 3 * time.Second},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{map[string]string{"Retry-After": now.Add(7 * time.Second).Format(http.TimeFormat)}, 7 * time.Second},
		{map[string]string{"Retry-After": now.Add(-7 * time.Second).Format(http.TimeFormat)}, 0},
		{map[string]string{"Retry-After": "-1"}, 0},
		{map[string]string{"Retry-After": "soon"}, 0},
		{map[string]string{"retry-after-ms": "250", "Retry-After": "9"}, 250 * time.Millisecond},
		{map[string]string{"retry-after-ms": "x", "Retry-After": "9"}, 9 * time.Second},
		{map[string]string{}, 0},
	}
	for _, c := range cases {
		h := http.Header{}
		for k, v := range c.hdr {
			h.Set(k, v)
		}
		if got := parseRetryAfter(h, now); got != c.want {
			t.Errorf("%v: got %v, want %v", c.hdr, got, c.want)
		}
	}
}

func TestBackoffDelay(t *testing.T) {
	lo := func(n int64) int64 { return 0 }
	hi := func(n int64) int64 { return n - 1 }
	base, bmax := 100*time.Millisecond, time.Second
	for attempt, want := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		want *= time.Millisecond
		if got := backoffDelay(base, bmax, attempt, 0, lo); got != want/2 {
			t.Errorf("attempt %d low: %v, want %v", attempt, got, want/2)
		}
		if got := backoffDelay(base, bmax, attempt, 0, hi); got != want {
			t.Errorf("attempt %d high: %v, want %v", attempt, got, want)
		}
	}
	if got := backoffDelay(base, bmax, 100, 0, hi); got != bmax {
		t.Errorf("huge attempt: %v", got)
	}
	if got := backoffDelay(base, bmax, 0, 5*time.Second, hi); got != 5*time.Second {
		t.Errorf("Retry-After 5s: %v", got)
	}
	if got := backoffDelay(base, bmax, 0, time.Hour, hi); got != 60*time.Second {
		t.Errorf("Retry-After 1h: %v, want the 60s cap", got)
	}
	// Real jitter stays within [d/2, d].
	for range 1000 {
		if got := backoffDelay(base, bmax, 2, 0, randInt64N); got < 200*time.Millisecond || got > 400*time.Millisecond {
			t.Fatalf("jittered delay %v outside [200ms, 400ms]", got)
		}
	}
}

func TestTokenBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := newTokenBucket(6000, func() time.Time { return now }) // 100/s, capacity 100
	if w := b.reserve(60); w != 0 {
		t.Errorf("first reserve waits %v", w)
	}
	if w := b.reserve(60); w != 200*time.Millisecond { // balance 40 → needs 20 more
		t.Errorf("second reserve waits %v, want 200ms", w)
	}
	b.adjust(-40) // refund: balance -20 → 20
	now = now.Add(100 * time.Millisecond)
	if w := b.reserve(30); w != 0 { // balance 30
		t.Errorf("after refund and 100ms: waits %v, want 0", w)
	}
	if w := b.reserve(500); w != time.Second { // larger than capacity: waits until full
		t.Errorf("oversized reserve waits %v, want 1s", w)
	}
	if w := b.reserve(10); (w - 5100*time.Millisecond).Abs() > time.Microsecond { // balance -500 → needs 510
		t.Errorf("after oversized: waits %v, want 5.1s", w)
	}
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}
