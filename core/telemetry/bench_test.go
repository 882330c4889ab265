package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/telemetry"
)

// cpuTime returns the process's user + system CPU time.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// collector is a stand-in for an OTLP/HTTP collector: it reads and
// accepts every export and keeps the trace exports' bodies. Its count
// decodes them to count their spans; it is called after the CPU time is
// taken, so that the collector's decoding, which runs in the benchmark's
// process, is not counted as the exporting side's cost.
func collector(b *testing.B) (url string, count func() int64) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/v1/traces" {
			mu.Lock()
			bodies = append(bodies, body)
			mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	return srv.URL, func() int64 {
		mu.Lock()
		defer mu.Unlock()
		var n int64
		for _, body := range bodies {
			var req colltrace.ExportTraceServiceRequest
			if err := proto.Unmarshal(body, &req); err != nil {
				b.Fatalf("the collector got a trace export it cannot decode: %v", err)
			}
			for _, rs := range req.ResourceSpans {
				for _, ss := range rs.ScopeSpans {
					n += int64(len(ss.Spans))
				}
			}
		}
		return n
	}
}

// counting is a span exporter that counts and drops what it is given.
type counting struct{ spans atomic.Int64 }

func (c *counting) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	c.spans.Add(int64(len(s)))
	return nil
}
func (*counting) Shutdown(context.Context) error { return nil }

// openAILike answers at once, and sets on the chat span what the OpenAI
// client sets on it (core/llm/openai.go: the seed as sent, the response
// model, id and finish reasons), so that the benchmark pays for the
// attributes a real call adds.
type openAILike struct{}

func (openAILike) Chat(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(semconv.GenAIRequestSeed(int(req.Seed)))
		span.SetAttributes(semconv.GenAIResponseModel(req.Model), semconv.GenAIResponseID("chatcmpl-1"), semconv.GenAIResponseFinishReasons("stop"))
	}
	return core.ChatResponse{Text: "ok", Usage: core.Usage{PromptTokens: 10, CompletionTokens: 5, Backend: "openai", Latency: time.Millisecond},
		Traffic: core.Traffic{Requests: 1}}, nil
}

// spansPerCall is what one call makes: an invoke_agent and a chat span.
const spansPerCall = 2

// BenchmarkChatOverhead measures the CPU time telemetry adds to one LLM
// call: an invoke_agent and a chat span with their attributes, the two
// histograms, and the OTLP/HTTP export of it all to a local collector
// stand-in (the flush at the end is inside the measurement). The LLM
// answers at once, so cpu-ns/call is the telemetry's own cost (off: the
// bare call). The span queue holds every span of the run, and the
// benchmark fails unless every span reached the exporter: a figure
// measured while the queue drops spans is too low.
func BenchmarkChatOverhead(b *testing.B) {
	req := core.ChatRequest{Model: "m", Messages: []core.Message{{Role: "user", Content: "write"}}, MaxTokens: 64, Temperature: 0.7, Seed: 42, Decision: "write"}
	run := func(b *testing.B, tel *telemetry.Telemetry, exported func() int64) {
		l := tel.WrapLLM(openAILike{}, telemetry.Caller{AgentName: "writer-0", Backend: "openai", BaseURL: "http://127.0.0.1:8000/v1"})
		ctx, ep := tel.StartEpisode(context.Background(), "bench", 1, 2)
		b.ReportAllocs()
		b.ResetTimer()
		start := cpuTime(b)
		for b.Loop() {
			if _, err := l.Chat(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		ep.End(nil)
		if err := tel.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/call")
		if exported != nil {
			if made, got := int64(spansPerCall*b.N+1), exported(); got != made {
				b.Fatalf("%d spans made, %d exported: the queue dropped spans", made, got)
			}
		}
	}
	// Every span of a run of up to 500 000 calls fits in the queue (b.N
	// is not known before b.Loop ends).
	const queue = 1 << 20
	b.Run("off", func(b *testing.B) { run(b, nil, nil) })
	b.Run("spans-discarded", func(b *testing.B) {
		// The spans and metric points made, batched and dropped by the
		// exporter: the cost without the OTLP encoding and HTTP.
		exp := &counting{}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp, sdktrace.WithMaxQueueSize(queue)))
		tel, err := telemetry.New(telemetry.Config{Exporter: telemetry.ExporterOTLP}, tp, sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
		if err != nil {
			b.Fatal(err)
		}
		run(b, tel, func() int64 {
			_ = tp.Shutdown(context.Background())
			return exp.spans.Load()
		})
	})
	b.Run("otlp-http", func(b *testing.B) {
		url, count := collector(b)
		b.Setenv("OTEL_BSP_MAX_QUEUE_SIZE", strconv.Itoa(queue))
		tel, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterOTLP, Protocol: telemetry.ProtocolHTTP, Endpoint: url})
		if err != nil {
			b.Fatal(err)
		}
		run(b, tel, count)
	})
}

// BenchmarkSimEpisode measures the CPU time of one writing episode with
// the simulated LLM: telemetry nil (the runtime as it was before
// telemetry: no wrapper, one nil check per episode), "none" (the default
// of an agentfile) and OTLP/HTTP to a collector stand-in.
func BenchmarkSimEpisode(b *testing.B) {
	path := filepath.Join(b.TempDir(), "agentfile.toml")
	if err := os.WriteFile(path, []byte("[env]\nsource = \"builtin:writing\"\n[env.params]\nwriters = 3\n[reward.weights]\nquality = 1.0\n[[rewards]]\nsource = \"builtin:writing.consistency\"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := agentfile.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	built, err := cfg.Build(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer built.Close()
	run := func(b *testing.B, tel *telemetry.Telemetry) {
		s := built.Setup
		s.Telemetry = tel
		calls := 0.0
		b.ResetTimer()
		start := cpuTime(b)
		seed := uint64(0)
		for b.Loop() {
			seed++
			res, err := rollout.RunEpisode(context.Background(), s, nil, "sop", seed, nil)
			if err != nil {
				b.Fatal(err)
			}
			calls += res.Episode.Metrics[core.MetricLLMCalls]
		}
		if err := tel.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(cpuTime(b)-start)/float64(b.N), "cpu-ns/episode")
		b.ReportMetric(calls/float64(b.N), "llm-calls/episode")
	}
	b.Run("nil", func(b *testing.B) { run(b, nil) })
	b.Run("none", func(b *testing.B) {
		tel, err := telemetry.Start(context.Background(), telemetry.DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		run(b, tel)
	})
	b.Run("otlp-http", func(b *testing.B) {
		url, _ := collector(b)
		tel, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterOTLP, Endpoint: url})
		if err != nil {
			b.Fatal(err)
		}
		run(b, tel)
	})
}
