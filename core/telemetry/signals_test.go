package telemetry_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/llm"
	"github.com/troupe-dev/troupe/core/telemetry"
)

// chatOnce makes one traced call and ends the episode span around it.
func chatOnce(t *testing.T, tel *telemetry.Telemetry) {
	t.Helper()
	l := tel.WrapLLM(fakeLLM{}, telemetry.Caller{AgentName: "a", Backend: "fake"})
	ctx, ep := tel.StartEpisode(context.Background(), "e", 1, 2)
	if _, err := l.Chat(ctx, core.ChatRequest{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	ep.End(nil)
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStdoutOutputAndSignalsOff checks that the stdout exporter writes to
// Config.Output, and that $OTEL_TRACES_EXPORTER / $OTEL_METRICS_EXPORTER =
// none each turn one signal off (both: telemetry off).
func TestStdoutOutputAndSignalsOff(t *testing.T) {
	for _, c := range []struct {
		traces, metrics string
		spans, points   bool
	}{
		{"", "", true, true},
		{"none", "", false, true},
		{"", "none", true, false},
		{"none", "none", false, false},
	} {
		t.Run(fmt.Sprintf("traces=%q,metrics=%q", c.traces, c.metrics), func(t *testing.T) {
			t.Setenv(telemetry.EnvTracesExporter, c.traces)
			t.Setenv(telemetry.EnvMetricsExporter, c.metrics)
			var buf bytes.Buffer
			tel := mustStart(t, telemetry.Config{Exporter: telemetry.ExporterStdout, Output: &buf})
			if got := tel.Enabled(); got != (c.spans || c.points) {
				t.Errorf("Enabled() = %v", got)
			}
			chatOnce(t, tel)
			out := buf.String()
			if got := strings.Contains(out, `"invoke_workflow e"`); got != c.spans {
				t.Errorf("spans written: %v, want %v:\n%.500s", got, c.spans, out)
			}
			if got := strings.Contains(out, `"gen_ai.client.token.usage"`); got != c.points {
				t.Errorf("metrics written: %v, want %v:\n%.500s", got, c.points, out)
			}
		})
	}
	t.Setenv(telemetry.EnvTracesExporter, "none,otlp")
	if _, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterStdout}); err == nil || !strings.Contains(err.Error(), telemetry.EnvTracesExporter) {
		t.Errorf("OTEL_TRACES_EXPORTER=none,otlp: %v, want an error naming it", err)
	}
}

// TestSpanQueueSize checks that $OTEL_BSP_MAX_QUEUE_SIZE must be a positive
// number, and that the default queue holds a burst of calls that the
// SDK's own default (2048 spans) drops.
func TestSpanQueueSize(t *testing.T) {
	t.Setenv(telemetry.EnvSpanQueueSize, "lots")
	if _, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterStdout, Output: &bytes.Buffer{}}); err == nil || !strings.Contains(err.Error(), telemetry.EnvSpanQueueSize) {
		t.Errorf("OTEL_BSP_MAX_QUEUE_SIZE=lots: %v, want an error naming it", err)
	}
	for _, c := range []struct {
		env  string
		drop bool
	}{{"", false}, {"64", true}} {
		t.Setenv(telemetry.EnvSpanQueueSize, c.env)
		// An exporter that takes 50 ms per batch: the queue must hold
		// the burst while it works.
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(50 * time.Millisecond)
			w.Header().Set("Content-Type", "application/x-protobuf")
		}))
		tel := mustStart(t, telemetry.Config{Exporter: telemetry.ExporterOTLP, Endpoint: srv.URL})
		l := tel.WrapLLM(fakeLLM{}, telemetry.Caller{AgentName: "a", Backend: "fake"})
		const calls = 1500 // 3000 spans
		for range calls {
			if _, err := l.Chat(context.Background(), core.ChatRequest{Model: "m"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tel.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		dropped := tel.DroppedSpans()
		srv.Close()
		if (dropped > 0) != c.drop {
			t.Errorf("OTEL_BSP_MAX_QUEUE_SIZE=%q: %d of %d spans dropped", c.env, dropped, 2*calls)
		}
	}
}

// TestSimLatencyIsTheDuration checks that the simulated LLM's calls record
// their virtual latency (troupe.llm.latency_s) as
// gen_ai.client.operation.duration, not the microseconds they take.
func TestSimLatencyIsTheDuration(t *testing.T) {
	tel, exp, reader := inMemory(t, false)
	playTraced(t, simSetup(t), tel)
	var latency float64
	for _, s := range exp.GetSpans() {
		if strings.HasPrefix(s.Name, "chat ") {
			latency += attrs(s)["troupe.llm.latency_s"].AsFloat64()
		}
	}
	var sum float64
	for _, p := range durationPoints(t, reader) {
		if v, _ := p.Attributes.Value("gen_ai.provider.name"); v.AsString() != telemetry.ProviderSim {
			t.Errorf("a duration point of provider %q", v.AsString())
		}
		sum += p.Sum
	}
	if latency < 1 || sum != latency {
		t.Errorf("durations sum to %v s, the spans' troupe.llm.latency_s to %v s; want equal virtual seconds", sum, latency)
	}
}

// TestFailedCallTraffic checks that a call the OpenAI client gives up on
// records its traffic on the chat span (requests, retries, 429s, wait)
// and each retry as an event.
func TestFailedCallTraffic(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("retry-after-ms", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
	}))
	defer srv.Close()
	cfg := llm.DefaultConfig()
	cfg.Backend, cfg.BaseURL, cfg.Model, cfg.MaxRetries = llm.BackendOpenAI, srv.URL+"/v1", "m", 2
	c, err := llm.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	tel, exp, _ := inMemory(t, false)
	l := tel.WrapLLM(c, telemetry.Caller{AgentName: "a", Backend: "openai", BaseURL: cfg.BaseURL})
	if _, err := l.Chat(context.Background(), core.ChatRequest{Model: "m", Messages: []core.Message{{Role: "user", Content: "hi"}}}); err == nil {
		t.Fatal("no error")
	}
	found := false
	for _, s := range exp.GetSpans() {
		if s.Name != "chat m" {
			continue
		}
		found = true
		a := attrs(s)
		if a["troupe.llm.requests"].AsInt64() != 3 || a["troupe.llm.retries"].AsInt64() != 2 || a["troupe.llm.rate_limited"].AsInt64() != 3 || a["troupe.llm.wait_s"].AsFloat64() <= 0 {
			t.Errorf("traffic %v %v %v %v; want 3 requests, 2 retries, 3 rate-limited, a wait", a["troupe.llm.requests"].String(),
				a["troupe.llm.retries"].String(), a["troupe.llm.rate_limited"].String(), a["troupe.llm.wait_s"].String())
		}
		retries := 0
		for _, e := range s.Events {
			if e.Name == "gen_ai.client.retry" {
				retries++
			}
		}
		if retries != 2 || a["error.type"].AsString() == "" {
			t.Errorf("%d retry events (want 2), error.type %q", retries, a["error.type"].AsString())
		}
	}
	if !found || n.Load() != 3 {
		t.Fatalf("chat span found %v, %d requests", found, n.Load())
	}
}
