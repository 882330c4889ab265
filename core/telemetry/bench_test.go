package telemetry_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

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
// accepts every export.
func collector(b *testing.B) (string, *atomic.Int64) {
	var bytes atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		bytes.Add(n)
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	b.Cleanup(srv.Close)
	return srv.URL, &bytes
}

// discard is a span exporter that drops what it is given.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkChatOverhead measures the CPU time telemetry adds to one LLM
// call: an invoke_agent and a chat span with their attributes, the two
// histograms, and the OTLP/HTTP export of it all to a local collector
// stand-in (the flush at the end is inside the measurement). The LLM is a
// fake that answers at once, so cpu-ns/call is the telemetry's own cost
// (off: the bare call).
func BenchmarkChatOverhead(b *testing.B) {
	req := core.ChatRequest{Model: "m", Messages: []core.Message{{Role: "user", Content: "write"}}, MaxTokens: 64, Temperature: 0.7, Seed: 42, Decision: "write"}
	run := func(b *testing.B, tel *telemetry.Telemetry) {
		l := tel.WrapLLM(fakeLLM{}, telemetry.Caller{AgentName: "writer-0", Backend: "openai", BaseURL: "http://127.0.0.1:8000/v1"})
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
	}
	b.Run("off", func(b *testing.B) { run(b, nil) })
	b.Run("spans-discarded", func(b *testing.B) {
		// The spans and metric points made, batched and dropped: the
		// cost without the OTLP encoding and HTTP.
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
		tel, err := telemetry.New(telemetry.Config{Exporter: telemetry.ExporterOTLP}, tp, sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader())))
		if err != nil {
			b.Fatal(err)
		}
		run(b, tel)
		_ = tp.Shutdown(context.Background())
	})
	b.Run("otlp-http", func(b *testing.B) {
		url, sent := collector(b)
		tel, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterOTLP, Protocol: telemetry.ProtocolHTTP, Endpoint: url})
		if err != nil {
			b.Fatal(err)
		}
		run(b, tel)
		if sent.Load() == 0 {
			b.Fatal("nothing reached the collector")
		}
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
