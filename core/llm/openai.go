package llm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	openai "github.com/sashabaranov/go-openai"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/genai"
)

// Retry backoff of the openai backend: attempt k waits a uniformly random
// time in [d/2, d] with d = min(backoffBase·2^k, backoffMax).
const (
	backoffBase = 500 * time.Millisecond
	backoffMax  = 30 * time.Second
)

// ErrClosed is returned (wrapped) by the Chat of a backend [New] built,
// after its Close.
var ErrClosed = errors.New("llm backend closed")

// openAIClient is a core.LLM backed by an OpenAI-compatible
// chat-completions endpoint (BackendOpenAI). It is safe for concurrent use.
// See the package documentation for retries, limits and accounting.
type openAIClient struct {
	cfg       Config // as given to newOpenAI
	endpoint  string
	key       string // only for redaction; never printed
	client    *openai.Client
	transport *http.Transport
	sem       chan struct{}
	rpm       *rate.Limiter // nil: unlimited
	tpm       *tokenBucket  // nil: unlimited
	acc       accounting

	// backoffBase and backoffMax shape the retry delay (see backoffDelay).
	backoffBase, backoffMax time.Duration

	closeCtx context.Context
	closeFn  context.CancelFunc
	mu       sync.Mutex
	closed   bool
	wg       sync.WaitGroup
}

// newOpenAI returns the openai backend of cfg, a valid Config. It reads the
// API key from the environment variable cfg.APIKeyEnv once; the key
// appears in no error, log line or String output.
func newOpenAI(cfg Config) (*openAIClient, error) {
	baseURL, keyEnv := cmp.Or(cfg.BaseURL, defaultBaseURL), cmp.Or(cfg.APIKeyEnv, defaultAPIKeyEnv)
	key := os.Getenv(keyEnv)
	if key == "" && strings.TrimRight(baseURL, "/") == defaultBaseURL {
		return nil, core.NewSettingError("api_key_env", "$%s is empty; %s needs an API key (or set base_url to a local server)", keyEnv, defaultBaseURL)
	}
	transport := newTransport(cfg.MaxConcurrency)
	oc := openai.DefaultConfig(key)
	oc.BaseURL = strings.TrimRight(baseURL, "/")
	oc.HTTPClient = &http.Client{Transport: drainingTransport{transport}}
	o := &openAIClient{
		cfg:         cfg,
		endpoint:    oc.BaseURL + "/chat/completions",
		key:         key,
		client:      openai.NewClientWithConfig(oc),
		transport:   transport,
		sem:         make(chan struct{}, cfg.MaxConcurrency),
		backoffBase: backoffBase,
		backoffMax:  backoffMax,
	}
	if cfg.RequestsPerMinute > 0 {
		o.rpm = rate.NewLimiter(rate.Limit(float64(cfg.RequestsPerMinute)/60), 1)
	}
	if cfg.TokensPerMinute > 0 {
		o.tpm = newTokenBucket(cfg.TokensPerMinute, time.Now)
	}
	o.closeCtx, o.closeFn = context.WithCancel(context.Background())
	return o, nil
}

// newTransport returns an HTTP transport that keeps one idle keep-alive
// connection per concurrent request, so that up to n requests in flight
// reuse their connections instead of redialling.
func newTransport(n int) *http.Transport {
	return &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   30 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          n,
		MaxIdleConnsPerHost:   n,
		MaxConnsPerHost:       n,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

// drainingTransport reads what is left of a response body (up to 64 KiB)
// before closing it, so that the keep-alive connection returns to the pool
// even when the JSON decoder stopped before EOF.
type drainingTransport struct{ rt http.RoundTripper }

func (d drainingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := d.rt.RoundTrip(r)
	if err == nil && resp.Body != nil {
		resp.Body = drainingBody{resp.Body}
	}
	return resp, err
}

type drainingBody struct{ io.ReadCloser }

func (b drainingBody) Close() error {
	_, _ = io.Copy(io.Discard, io.LimitReader(b.ReadCloser, 64<<10))
	return b.ReadCloser.Close()
}

// Name returns "openai", the backend's name in results.
func (o *openAIClient) Name() string { return "openai" }

// String describes the backend without its key.
func (o *openAIClient) String() string {
	return fmt.Sprintf("openai(base_url=%s model=%s max_concurrency=%d)", strings.TrimSuffix(o.endpoint, "/chat/completions"), o.cfg.Model, o.cfg.MaxConcurrency)
}

// Config returns the settings the backend was built from.
func (o *openAIClient) Config() Config { return o.cfg }

// GoString is String, so that %#v cannot print the key either.
func (o *openAIClient) GoString() string { return o.String() }

// accounting returns the backend's running totals.
func (o *openAIClient) accounting() *accounting { return &o.acc }

// Close ends every call in flight (they return errors wrapping ErrClosed),
// waits for them to return, and closes idle connections. Later calls fail
// with ErrClosed. Close is idempotent.
func (o *openAIClient) Close() error {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return nil
	}
	o.closed = true
	o.mu.Unlock()
	o.closeFn()
	o.wg.Wait()
	o.transport.CloseIdleConnections()
	return nil
}

func (o *openAIClient) begin() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.wg.Add(1)
	return true
}

// CallError is the error of a failed Chat call of the openai backend.
// Its message never contains the API key.
type CallError struct {
	// Endpoint is the URL posted to.
	Endpoint string
	// Status is the HTTP status of the last attempt (0 if none arrived).
	Status int
	// Attempts is the number of HTTP attempts made.
	Attempts int
	// Retryable reports whether the last error was of a retryable kind
	// (so the call failed because the retry cap was reached).
	Retryable bool
	// Traffic is what the failed call cost on the wire.
	Traffic core.Traffic
	msg     string
	cause   error // context errors and ErrClosed only
}

// Error describes the call's failure: the endpoint, the last attempt's
// error and how many attempts were made.
func (e *CallError) Error() string {
	s := "openai: POST " + e.Endpoint + ": " + e.msg
	switch {
	case e.Retryable && e.Attempts > 1:
		s += fmt.Sprintf(" (gave up after %d attempts)", e.Attempts)
	case e.Attempts > 1:
		s += fmt.Sprintf(" (after %d attempts)", e.Attempts)
	}
	return s
}

// CallTraffic returns e.Traffic, for those that see e only as an error
// (core/telemetry records it on the call's span).
func (e *CallError) CallTraffic() core.Traffic { return e.Traffic }

// Unwrap returns context.Canceled, context.DeadlineExceeded or ErrClosed
// when the call ended for that reason, else nil.
func (e *CallError) Unwrap() error { return e.cause }

// attemptError is one failed attempt, classified.
type attemptError struct {
	status     int
	retryable  bool
	retryAfter time.Duration
	msg        string
	cause      error
	// stage names what the call was waiting for when its context ended
	// ("" = the HTTP request was in flight).
	stage string
	// timeout marks a request that ran out of time.
	timeout bool
}

// count adds what one attempt cost to t: a request if one was sent, and
// its kind of failure.
func (e *attemptError) count(t *core.Traffic, sent bool) {
	if sent {
		t.Requests++
	}
	if e == nil {
		return
	}
	switch {
	case e.status == http.StatusTooManyRequests:
		t.RateLimited++
	case e.status >= 500:
		t.ServerErrors++
	}
	if e.timeout {
		t.Timeouts++
	}
}

// Chat sends one chat completion. It waits for a concurrency slot and the
// rate limits, retries what is retryable, and returns the first choice's
// text with Usage{prompt and completion tokens from the response, Latency
// = wall time of the whole call including queueing and retries, Backend
// "openai"}.
func (o *openAIClient) Chat(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	if !o.begin() {
		return core.ChatResponse{}, &CallError{Endpoint: o.endpoint, msg: ErrClosed.Error(), cause: ErrClosed}
	}
	defer o.wg.Done()
	start := time.Now()
	callerCtx := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(o.closeCtx, cancel)
	defer stop()

	oreq, err := o.buildRequest(req)
	if err != nil {
		o.acc.RecordFailure(req.Agent, 0)
		return core.ChatResponse{}, &CallError{Endpoint: o.endpoint, msg: err.Error()}
	}
	estimate := EstimatePromptTokens(req.Messages) + max(req.MaxTokens, 0)
	var traffic core.Traffic
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			traffic.Retries++
		}
		resp, sent, aerr := o.attempt(ctx, oreq, estimate, &traffic)
		aerr.count(&traffic, sent)
		if aerr == nil {
			text := resp.Choices[0].Message.Content
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				// The chat span of core/telemetry, when tracing is on.
				setResponseAttrs(span, oreq, resp)
			}
			u := core.Usage{PromptTokens: resp.Usage.PromptTokens, CompletionTokens: resp.Usage.CompletionTokens, Backend: string(BackendOpenAI)}
			estimated := u.PromptTokens == 0 && u.CompletionTokens == 0
			if estimated {
				u.PromptTokens = EstimatePromptTokens(req.Messages)
				u.CompletionTokens = estimateTokens(text)
			}
			if o.tpm != nil {
				o.tpm.adjust(u.Tokens() - estimate)
			}
			u.Latency = time.Since(start)
			o.acc.RecordCall(req.Agent, u, attempt, estimated)
			return core.ChatResponse{Text: text, Usage: u, Traffic: traffic}, nil
		}
		if ctx.Err() != nil && aerr.cause == nil {
			aerr.cause = o.stopCause(callerCtx)
			stage := aerr.stage
			if stage == "" {
				stage = "the request was in flight"
			}
			aerr.msg = aerr.cause.Error() + " while " + stage
			aerr.retryable = false
		}
		if !aerr.retryable || attempt >= o.cfg.MaxRetries {
			o.acc.RecordFailure(req.Agent, attempt)
			return core.ChatResponse{}, &CallError{
				Endpoint: o.endpoint, Status: aerr.status, Attempts: attempt + 1,
				Retryable: aerr.retryable, Traffic: traffic, msg: o.redact(aerr.msg), cause: aerr.cause,
			}
		}
		delay := o.backoff(attempt, aerr.retryAfter)
		if span := trace.SpanFromContext(ctx); span.IsRecording() {
			// The chat span of core/telemetry, when tracing is on.
			span.AddEvent(genai.EventRetry, trace.WithAttributes(genai.Attempt.Int(attempt+1),
				genai.HTTPStatusCode.Int(aerr.status), genai.RetryDelay.Float64(delay.Seconds()),
				genai.RetryAfter.Bool(aerr.retryAfter > 0), genai.RetryError.String(o.redact(aerr.msg))))
		}
		if o.cfg.Logger != nil {
			o.cfg.Logger.Warn("llm call retrying", "backend", string(BackendOpenAI), "endpoint", o.endpoint,
				"agent", req.Agent, "decision", req.Decision, "attempt", attempt+1, "status", aerr.status,
				"delay", delay, "retry_after", aerr.retryAfter > 0, "error", o.redact(aerr.msg))
		}
		waited := time.Now()
		err := sleepCtx(ctx, delay)
		traffic.WaitSeconds += time.Since(waited).Seconds()
		if err != nil {
			cause := o.stopCause(callerCtx)
			o.acc.RecordFailure(req.Agent, attempt)
			return core.ChatResponse{}, &CallError{
				Endpoint: o.endpoint, Status: aerr.status, Attempts: attempt + 1, Traffic: traffic,
				msg: cause.Error() + " while waiting to retry after: " + o.redact(aerr.msg), cause: cause,
			}
		}
	}
}

// stopCause says why the call's context ended: the caller's context, or
// Close.
func (o *openAIClient) stopCause(callerCtx context.Context) error {
	if err := callerCtx.Err(); err != nil {
		return err
	}
	return ErrClosed
}

// attempt makes one HTTP attempt under the concurrency and rate limits.
// sent reports whether the request went out; the time spent waiting for
// a rate limit is added to traffic.
func (o *openAIClient) attempt(ctx context.Context, oreq openai.ChatCompletionRequest, estimate int, traffic *core.Traffic) (_ openai.ChatCompletionResponse, sent bool, _ *attemptError) {
	select {
	case o.sem <- struct{}{}:
	case <-ctx.Done():
		return openai.ChatCompletionResponse{}, false, &attemptError{stage: "waiting for a concurrency slot"}
	}
	defer func() { <-o.sem }()
	if ctx.Err() != nil { // select picks at random when both were ready
		return openai.ChatCompletionResponse{}, false, &attemptError{stage: "waiting for a concurrency slot"}
	}
	waited := time.Now()
	if o.rpm != nil {
		if err := o.rpm.Wait(ctx); err != nil {
			if ctx.Err() != nil {
				return openai.ChatCompletionResponse{}, false, &attemptError{stage: "waiting for the requests_per_minute limit"}
			}
			// The wait would outlast the caller's deadline.
			return openai.ChatCompletionResponse{}, false, &attemptError{msg: "requests_per_minute limit: " + err.Error(), cause: context.DeadlineExceeded}
		}
	}
	if o.tpm != nil {
		if err := sleepCtx(ctx, o.tpm.reserve(estimate)); err != nil || ctx.Err() != nil {
			o.tpm.adjust(-estimate)
			return openai.ChatCompletionResponse{}, false, &attemptError{stage: "waiting for the tokens_per_minute limit"}
		}
	}
	if o.rpm != nil || o.tpm != nil {
		traffic.WaitSeconds += time.Since(waited).Seconds()
	}
	callCtx, cancel := context.WithTimeout(ctx, o.cfg.Timeout)
	defer cancel()
	resp, err := o.client.CreateChatCompletion(callCtx, oreq)
	if err == nil && len(resp.Choices) == 0 {
		err = errNoChoices
	}
	if err != nil && o.tpm != nil {
		o.tpm.adjust(-estimate)
	}
	if err == nil {
		return resp, true, nil
	}
	if ctx.Err() != nil {
		return resp, true, &attemptError{} // message and cause filled in by Chat
	}
	if callCtx.Err() != nil {
		return resp, true, &attemptError{retryable: true, timeout: true, msg: fmt.Sprintf("timed out after %s", o.cfg.Timeout)}
	}
	return resp, true, classify(err, resp.Header(), time.Now())
}

var errNoChoices = errors.New("response has no choices")

// redact removes the API key from s.
func (o *openAIClient) redact(s string) string {
	if o.key == "" {
		return s
	}
	return strings.ReplaceAll(s, o.key, "[redacted]")
}

// backoff returns the delay before retry number attempt+1.
func (o *openAIClient) backoff(attempt int, retryAfter time.Duration) time.Duration {
	return backoffDelay(o.backoffBase, o.backoffMax, attempt, retryAfter, randInt64N)
}

// buildRequest maps a core.ChatRequest to go-openai's request.
func (o *openAIClient) buildRequest(req core.ChatRequest) (openai.ChatCompletionRequest, error) {
	model := req.Model
	if model == "" {
		model = o.cfg.Model
	}
	if model == "" {
		return openai.ChatCompletionRequest{}, errors.New("no model: set model in the llm config or ChatRequest.Model")
	}
	if len(req.Messages) == 0 {
		return openai.ChatCompletionRequest{}, fmt.Errorf("agent %d decision %q: request has no messages", req.Agent, req.Decision)
	}
	if req.MaxTokens < 0 {
		return openai.ChatCompletionRequest{}, fmt.Errorf("agent %d decision %q: negative max_tokens %d", req.Agent, req.Decision, req.MaxTokens)
	}
	if math.IsNaN(req.Temperature) || req.Temperature < 0 || req.Temperature > 2 {
		return openai.ChatCompletionRequest{}, fmt.Errorf("agent %d decision %q: temperature %v outside [0, 2]", req.Agent, req.Decision, req.Temperature)
	}
	msgs := make([]openai.ChatCompletionMessage, len(req.Messages))
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "user", "assistant":
		default:
			return openai.ChatCompletionRequest{}, fmt.Errorf("agent %d decision %q: message %d has role %q, want system, user or assistant", req.Agent, req.Decision, i, m.Role)
		}
		msgs[i] = openai.ChatCompletionMessage{Role: m.Role, Content: m.Content}
	}
	// max_tokens, which go-openai marks deprecated, on purpose: the
	// OpenAI-compatible servers (vLLM, llama.cpp, Ollama) read it and not
	// always max_completion_tokens; reasoning models get the latter below.
	r := openai.ChatCompletionRequest{
		Model:       model,
		Messages:    msgs,
		MaxTokens:   req.MaxTokens,
		Temperature: float32(req.Temperature),
		Stop:        req.Stop,
	}
	// go-openai omits a zero temperature, which servers read as their
	// default (1.0); the smallest positive float32 is greedy everywhere.
	if r.Temperature == 0 {
		r.Temperature = math.SmallestNonzeroFloat32
	}
	if req.Seed != 0 {
		// Many servers (llama.cpp) hold the seed in 32 bits.
		s := int(req.Seed % (1 << 31))
		r.Seed = &s
	}
	if err := openai.NewReasoningValidator().Validate(r); err != nil {
		// Reasoning models take max_completion_tokens and a fixed
		// temperature.
		r.MaxCompletionTokens, r.MaxTokens = r.MaxTokens, 0
		r.Temperature = 0
		if err := openai.NewReasoningValidator().Validate(r); err != nil {
			return openai.ChatCompletionRequest{}, fmt.Errorf("model %q: %w", model, err)
		}
	}
	return r, nil
}

// DefaultModel returns the configured model.
func (o *openAIClient) DefaultModel() string { return o.cfg.Model }

// setResponseAttrs sets on a call's chat span what only the client knows:
// the seed as sent (see buildRequest; it replaces core/telemetry's), the
// response's model and id and the finish reason, in one SetAttributes.
func setResponseAttrs(span trace.Span, oreq openai.ChatCompletionRequest, resp openai.ChatCompletionResponse) {
	kv := [4]attribute.KeyValue{genai.ResponseModel.String(resp.Model), genai.ResponseID.String(resp.ID),
		genai.ResponseFinishReasons.StringSlice([]string{string(resp.Choices[0].FinishReason)})}
	n := 3
	if oreq.Seed != nil {
		kv[n], n = genai.RequestSeed.Int(*oreq.Seed), n+1
	}
	span.SetAttributes(kv[:n]...)
}
