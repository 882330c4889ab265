package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
)

// LLMResult is one LLM-orchestration measurement: the openai backend
// against an in-process OpenAI-compatible server that answers every
// request after a fixed latency, with InFlight closed-loop callers,
// compared with a bare net/http client posting a pre-encoded body to the
// same server under the same conditions.
type LLMResult struct {
	// Arrivals is "staggered" (caller i starts i/InFlight of a latency
	// late, so calls arrive spread out, as in a steady state) or
	// "synchronized" (all callers start together and stay in lock step:
	// every response arrives in one burst).
	Arrivals  string  `json:"arrivals"`
	InFlight  int     `json:"in_flight"`
	LatencyMs float64 `json:"latency_ms"` // the server's fixed latency
	WindowS   float64 `json:"window_s"`   // measured window per phase
	Calls     int     `json:"calls"`      // Chat calls completed in the windows
	// ChatMs and RawMs are the mean latencies of a Chat call and of a bare
	// HTTP call; OverheadUs = ChatMs − RawMs in µs, the framework's own
	// cost per call (request building, JSON, limits, accounting).
	ChatMs     float64 `json:"chat_ms"`
	RawMs      float64 `json:"raw_ms"`
	OverheadUs float64 `json:"overhead_us"`
	// OverheadVsLatencyUs = ChatMs − LatencyMs in µs: everything above the
	// server's latency, HTTP stack and the in-process server included.
	OverheadVsLatencyUs float64 `json:"overhead_vs_latency_us"`
	// CallsPerSec is Chat throughput in the window; IdealCallsPerSec =
	// InFlight ÷ latency; FractionOfIdeal their ratio. RawFractionOfIdeal
	// is the same for the bare client (what the HTTP stack alone reaches).
	CallsPerSec        float64 `json:"calls_per_sec"`
	IdealCallsPerSec   float64 `json:"ideal_calls_per_sec"`
	FractionOfIdeal    float64 `json:"fraction_of_ideal"`
	RawFractionOfIdeal float64 `json:"raw_fraction_of_ideal"`
	// CPUUsPerCall and RawCPUUsPerCall are process CPU time (client and
	// in-process server, user + system) per call, 0 where the OS does not
	// say.
	CPUUsPerCall    float64 `json:"cpu_us_per_call"`
	RawCPUUsPerCall float64 `json:"raw_cpu_us_per_call"`
	// ChatAllocsPerCall and RawAllocsPerCall are heap allocations per
	// serial call (server side included); AllocsPerCall is their
	// difference, the framework's own.
	ChatAllocsPerCall float64 `json:"chat_allocs_per_call"`
	RawAllocsPerCall  float64 `json:"raw_allocs_per_call"`
	AllocsPerCall     float64 `json:"allocs_per_call"`
	Load1             float64 `json:"load1"`
}

// Arrival modes of MeasureLLM.
const (
	ArrivalsStaggered    = "staggered"
	ArrivalsSynchronized = "synchronized"
)

const benchCompletion = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"bench-model",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"a reasonably sized completion of a few dozen tokens for the benchmark"},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":120,"completion_tokens":30,"total_tokens":150}}`

const benchRequestBody = `{"model":"bench-model","messages":[{"role":"system","content":"You write RFC sections."},{"role":"user","content":"Write the Motivation section."}],"max_tokens":256,"temperature":0.7}`

var benchRequest = core.ChatRequest{Model: "bench-model", Messages: []core.Message{{Role: "system", Content: "You write RFC sections."}, {Role: "user", Content: "Write the Motivation section."}}, MaxTokens: 256, Temperature: 0.7}

// LLMServer is an in-process OpenAI-compatible chat-completions endpoint
// that answers every request with the same completion after Latency.
type LLMServer struct {
	*httptest.Server
	Latency time.Duration
}

// NewLLMServer starts a server; Close it when done.
func NewLLMServer(latency time.Duration) *LLMServer {
	s := &LLMServer{Latency: latency}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
			return
		}
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			return
		}
		if s.Latency > 0 {
			time.Sleep(s.Latency)
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, benchCompletion)
	}))
	return s
}

// noKeyEnv names an environment variable that holds no API key, so the
// backend sends no Authorization header to the local server.
const noKeyEnv = "TROUPE_BENCH_UNSET_API_KEY"

// NewBenchOpenAI returns the openai backend pointed at s with the given
// max_concurrency and no retries.
func NewBenchOpenAI(s *LLMServer, concurrency int) (llm.Client, error) {
	cfg := llm.DefaultConfig()
	cfg.Backend, cfg.BaseURL, cfg.Model, cfg.APIKeyEnv = llm.BackendOpenAI, s.URL+"/v1", "bench-model", noKeyEnv
	cfg.MaxConcurrency, cfg.MaxRetries = concurrency, 0
	return llm.New(cfg)
}

// rawClient is the baseline: a bare net/http client with a transport
// sized like the backend's (one keep-alive connection per call in flight).
func rawClient(n int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        n,
		MaxIdleConnsPerHost: n,
		MaxConnsPerHost:     n,
		IdleConnTimeout:     90 * time.Second,
	}}
}

func rawCall(c *http.Client, url string) error {
	resp, err := c.Post(url, "application/json", bytes.NewReader([]byte(benchRequestBody)))
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return err
}

// phaseStats is one phase of closed-loop calls, counted in its window.
type phaseStats struct {
	latency time.Duration // summed latency of the calls that started in the window
	started int           // calls that started in the window
	done    int           // calls that ended in the window
	all     int           // every call of the phase
	cpu     time.Duration // process CPU time of the whole phase
}

// steadyPhase runs workers closed-loop callers. Caller i starts at
// i·stagger/workers; callers keep calling until the window [ramp, ramp +
// window) (ramp = stagger + one latency, so every caller is busy) has
// passed. It counts calls that start and calls that end in the window.
func steadyPhase(workers int, stagger, latency, window time.Duration, call func() error) (phaseStats, error) {
	var st phaseStats
	var mu sync.Mutex
	var firstErr error
	var wg sync.WaitGroup
	cpu0, _ := cpuTime()
	start := time.Now()
	winStart := start.Add(stagger + latency)
	winEnd := winStart.Add(window)
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * stagger / time.Duration(workers))
			var mine phaseStats
			var myErr error
			for {
				t0 := time.Now()
				if !t0.Before(winEnd) {
					break
				}
				if err := call(); err != nil && myErr == nil {
					myErr = err
				}
				t1 := time.Now()
				mine.all++
				if !t0.Before(winStart) {
					mine.started++
					mine.latency += t1.Sub(t0)
				}
				if !t1.Before(winStart) && t1.Before(winEnd) {
					mine.done++
				}
			}
			mu.Lock()
			st.latency += mine.latency
			st.started += mine.started
			st.done += mine.done
			st.all += mine.all
			if firstErr == nil {
				firstErr = myErr
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	cpu1, _ := cpuTime()
	st.cpu = cpu1 - cpu0
	return st, firstErr
}

// MeasureLLM measures the openai backend with inflight closed-loop callers
// against a server of the given latency, arrivals staggered or
// synchronized: reps rounds, each a bare-client phase then a Chat phase
// (alternating, so both see the same machine load), each measured over a
// window, after one warm-up round that opens the connections.
func MeasureLLM(ctx context.Context, arrivals string, inflight, reps int, latency, window time.Duration) (LLMResult, error) {
	r := LLMResult{Arrivals: arrivals, InFlight: inflight, LatencyMs: float64(latency) / 1e6, WindowS: window.Seconds(), Load1: load1()}
	var stagger time.Duration
	switch arrivals {
	case ArrivalsStaggered:
		stagger = latency
	case ArrivalsSynchronized:
	default:
		return r, fmt.Errorf("arrivals %q: want %q or %q", arrivals, ArrivalsStaggered, ArrivalsSynchronized)
	}
	srv := NewLLMServer(latency)
	defer srv.Close()
	o, err := NewBenchOpenAI(srv, inflight)
	if err != nil {
		return r, err
	}
	defer o.Close()
	raw := rawClient(inflight)
	defer raw.CloseIdleConnections()
	url := srv.URL + "/v1/chat/completions"
	rawFn := func() error { return rawCall(raw, url) }
	chatFn := func() error { _, err := o.Chat(ctx, benchRequest); return err }
	// Warm up: open every connection of both clients.
	if _, err := steadyPhase(inflight, 0, latency, time.Millisecond, rawFn); err != nil {
		return r, fmt.Errorf("bare client: %w", err)
	}
	if _, err := steadyPhase(inflight, 0, latency, time.Millisecond, chatFn); err != nil {
		return r, fmt.Errorf("openai backend: %w", err)
	}
	var rawSt, chatSt phaseStats
	add := func(a *phaseStats, b phaseStats) {
		a.latency += b.latency
		a.started += b.started
		a.done += b.done
		a.all += b.all
		a.cpu += b.cpu
	}
	for range reps {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		st, err := steadyPhase(inflight, stagger, latency, window, rawFn)
		if err != nil {
			return r, fmt.Errorf("bare client: %w", err)
		}
		add(&rawSt, st)
		if st, err = steadyPhase(inflight, stagger, latency, window, chatFn); err != nil {
			return r, fmt.Errorf("openai backend: %w", err)
		}
		add(&chatSt, st)
	}
	if chatSt.started == 0 || rawSt.started == 0 {
		return r, fmt.Errorf("no call started in the measured window (%s)", window)
	}
	win := window.Seconds() * float64(reps)
	r.Calls = chatSt.done
	r.ChatMs = chatSt.latency.Seconds() / float64(chatSt.started) * 1e3
	r.RawMs = rawSt.latency.Seconds() / float64(rawSt.started) * 1e3
	r.OverheadUs = (r.ChatMs - r.RawMs) * 1e3
	r.OverheadVsLatencyUs = (r.ChatMs - r.LatencyMs) * 1e3
	r.IdealCallsPerSec = float64(inflight) / latency.Seconds()
	r.CallsPerSec = float64(chatSt.done) / win
	r.FractionOfIdeal = r.CallsPerSec / r.IdealCallsPerSec
	r.RawFractionOfIdeal = float64(rawSt.done) / win / r.IdealCallsPerSec
	r.CPUUsPerCall = chatSt.cpu.Seconds() / float64(chatSt.all) * 1e6
	r.RawCPUUsPerCall = rawSt.cpu.Seconds() / float64(rawSt.all) * 1e6
	r.ChatAllocsPerCall, r.RawAllocsPerCall, err = LLMCallAllocs(ctx, 200)
	r.AllocsPerCall = r.ChatAllocsPerCall - r.RawAllocsPerCall
	return r, err
}

// LLMCallAllocs returns the heap allocations per call of n serial Chat
// calls and of n serial bare-client calls against a server that answers at
// once (the process's allocations, so the server's count in both).
func LLMCallAllocs(ctx context.Context, n int) (chat, raw float64, err error) {
	srv := NewLLMServer(0)
	defer srv.Close()
	o, err := NewBenchOpenAI(srv, 1)
	if err != nil {
		return 0, 0, err
	}
	defer o.Close()
	rc := rawClient(1)
	defer rc.CloseIdleConnections()
	url := srv.URL + "/v1/chat/completions"
	count := func(call func() error) (float64, error) {
		for range 10 { // warm up: connection, pools
			if err := call(); err != nil {
				return 0, err
			}
		}
		runtime.GC()
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		for range n {
			if err := call(); err != nil {
				return 0, err
			}
		}
		runtime.ReadMemStats(&b)
		return float64(b.Mallocs-a.Mallocs) / float64(n), nil
	}
	if raw, err = count(func() error { return rawCall(rc, url) }); err != nil {
		return 0, 0, fmt.Errorf("bare client: %w", err)
	}
	if chat, err = count(func() error { _, err := o.Chat(ctx, benchRequest); return err }); err != nil {
		return 0, 0, fmt.Errorf("openai backend: %w", err)
	}
	return chat, raw, nil
}

func runLLM(ctx context.Context, o *Options) ([]LLMResult, error) {
	var out []LLMResult
	window := time.Duration(o.pick(1, 4)) * 500 * time.Millisecond
	for _, arr := range []string{ArrivalsStaggered, ArrivalsSynchronized} {
		r, err := MeasureLLM(ctx, arr, 256, o.pick(1, 3), 50*time.Millisecond, window)
		if err != nil {
			return out, fmt.Errorf("llm (%s): %w", arr, err)
		}
		o.logf("llm %d in flight, %s: chat %.2f ms, raw %.2f ms, overhead %.0f µs/call, %.0f calls/s = %.1f%% of ideal (raw %.1f%%), cpu %.0f µs/call (raw %.0f), %.0f allocs/call (framework)",
			r.InFlight, arr, r.ChatMs, r.RawMs, r.OverheadUs, r.CallsPerSec, 100*r.FractionOfIdeal, 100*r.RawFractionOfIdeal, r.CPUUsPerCall, r.RawCPUUsPerCall, r.AllocsPerCall)
		out = append(out, r)
	}
	return out, nil
}
