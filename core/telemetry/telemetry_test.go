package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/telemetry"
	"github.com/troupe-dev/troupe/core/trainer"
	_ "github.com/troupe-dev/troupe/plugins/all"
)

// usage is what the fake server was asked and reported for one
// completion.
type usage struct {
	prompt, completion int
	temperature        float64
	maxTokens, seed    int64
}

// chatServer is an in-process OpenAI-compatible server. Its first request
// gets a 429 (retry after 5 ms); every other one a Markdown section with
// a usage of its own, remembered by the completion's id.
type chatServer struct {
	*httptest.Server
	mu      sync.Mutex
	n       int
	usage   map[string]usage
	prompts []string
}

func newChatServer(t testing.TB) *chatServer {
	s := &chatServer{usage: map[string]usage{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model       string
			Messages    []core.Message
			Temperature float64 `json:"temperature"`
			MaxTokens   int64   `json:"max_tokens"`
			Seed        int64   `json:"seed"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.n++
		n := s.n
		for _, m := range req.Messages {
			s.prompts = append(s.prompts, m.Content)
		}
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			s.mu.Unlock()
			w.Header().Set("retry-after-ms", "5")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"slow down","type":"rate_limit"}}`)
			return
		}
		id := fmt.Sprintf("chatcmpl-%d", n)
		u := usage{prompt: 100 + n, completion: 30 + 2*n, temperature: req.Temperature, maxTokens: req.MaxTokens, seed: req.Seed}
		s.usage[id] = u
		s.mu.Unlock()
		text := fmt.Sprintf("## Section %d\n\nWe describe the design in plain words.\n", n)
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": id, "object": "chat.completion", "model": req.Model + "-served",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": text}}},
			"usage":   map[string]any{"prompt_tokens": u.prompt, "completion_tokens": u.completion, "total_tokens": u.prompt + u.completion},
		})
	}))
	t.Cleanup(s.Close)
	return s
}

// writingSetup builds the writing task with every agent's LLM at url.
// extra is appended to [llm.default].
func writingSetup(t *testing.T, url, extra string) rollout.Setup {
	t.Helper()
	t.Setenv("TROUPE_TELEMETRY_TEST_KEY", "sk-telemetry-test")
	path := filepath.Join(t.TempDir(), "agentfile.toml")
	af := fmt.Sprintf(`[project]
name = "telemetry"
seed = 3
[env]
source = "builtin:writing"
[env.params]
writers = 2
[llm.default]
backend = "openai"
model = "test-model"
base_url = "%s/v1"
api_key_env = "TROUPE_TELEMETRY_TEST_KEY"
timeout = "10s"
%s
[[rewards]]
source = "builtin:writing.consistency"
[[rewards]]
source = "builtin:tokens"
[reward.weights]
quality = 1.0
cost = 0.1
[rollout]
max_steps = 4
`, url, extra)
	if err := os.WriteFile(path, []byte(af), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := agentfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b.Setup
}

// inMemory returns telemetry that keeps its spans and metrics in memory.
func inMemory(t *testing.T, capture bool) (*telemetry.Telemetry, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(telemetry.Config{Exporter: telemetry.ExporterOTLP, CaptureContent: capture},
		sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)), sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	return tel, exp, reader
}

// durationPoints collects reader's metrics and returns the data points of
// gen_ai.client.operation.duration.
func durationPoints(t *testing.T, reader *sdkmetric.ManualReader) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var points []metricdata.HistogramDataPoint[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "gen_ai.client.operation.duration" {
				points = append(points, m.Data.(metricdata.Histogram[float64]).DataPoints...)
			}
		}
	}
	return points
}

func attrs(s tracetest.SpanStub) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, a := range s.Attributes {
		m[a.Key] = a.Value
	}
	return m
}

// playTraced plays one writing episode under an iteration span.
func playTraced(t *testing.T, s rollout.Setup, tel *telemetry.Telemetry) rollout.EpisodeResult {
	t.Helper()
	s.Telemetry = tel
	ctx, it := tel.StartIteration(context.Background(), 1)
	res, err := rollout.RunEpisode(ctx, s, nil, "sop", 5, nil)
	it.End(err)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestWritingEpisodeSpanTree checks the spans of one writing episode whose
// texts come from an OpenAI-compatible server: the tree iteration →
// invoke_workflow → invoke_agent → chat, the GenAI attributes, token
// counts equal to the server's usage, the 429 retry as an event, the
// reward components as evaluation events, the metrics, and no prompt
// text.
func TestWritingEpisodeSpanTree(t *testing.T) {
	srv := newChatServer(t)
	tel, exp, reader := inMemory(t, false)
	res := playTraced(t, writingSetup(t, srv.URL, ""), tel)
	spans := exp.GetSpans()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	byName := map[string][]tracetest.SpanStub{}
	var chats []tracetest.SpanStub
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
		name := s.Name
		if strings.HasPrefix(name, "chat ") {
			chats = append(chats, s)
		}
		if strings.HasPrefix(name, "invoke_agent ") {
			name = "invoke_agent"
		}
		byName[name] = append(byName[name], s)
	}
	parent := func(s tracetest.SpanStub) string { return byID[s.Parent.SpanID()].Name }
	if n := len(byName["train iteration 1"]); n != 1 {
		t.Fatalf("%d iteration spans, want 1", n)
	}
	wf := byName["invoke_workflow writing"]
	if len(wf) != 1 {
		t.Fatalf("%d invoke_workflow spans, want 1 (spans: %v)", len(wf), len(spans))
	}
	ep := wf[0]
	if parent(ep) != "train iteration 1" {
		t.Errorf("the episode's parent is %q", parent(ep))
	}
	a := attrs(ep)
	if got, want := a["gen_ai.conversation.id"].AsString(), fmt.Sprintf("writing/5/%d", rollout.RolloutSeed(5, 0)); got != want {
		t.Errorf("gen_ai.conversation.id = %q, want %q", got, want)
	}
	if b := a["troupe.llm.backend"].AsString(); b != "openai" {
		t.Errorf("episode troupe.llm.backend = %q, want openai", b)
	}
	if a["gen_ai.operation.name"].AsString() != "invoke_workflow" {
		t.Errorf("episode gen_ai.operation.name = %v", a["gen_ai.operation.name"])
	}
	evals := map[string]float64{}
	for _, e := range ep.Events {
		if e.Name != "gen_ai.evaluation.result" {
			continue
		}
		var name string
		var score float64
		for _, kv := range e.Attributes {
			switch kv.Key {
			case "gen_ai.evaluation.name":
				name = kv.Value.AsString()
			case "gen_ai.evaluation.score.value":
				score = kv.Value.AsFloat64()
			}
		}
		evals[name] = score
	}
	if len(evals) != len(res.Components) || len(evals) == 0 {
		t.Errorf("evaluation events %v, want the components %v", evals, res.Components)
	}
	for k, v := range res.Components {
		if evals[k] != v {
			t.Errorf("evaluation %s = %v, want %v", k, evals[k], v)
		}
	}

	calls := int(res.Episode.Metrics[core.MetricLLMCalls])
	if calls == 0 || len(chats) != calls || len(byName["invoke_agent"]) != calls {
		t.Fatalf("%d chat and %d invoke_agent spans for %d LLM calls", len(chats), len(byName["invoke_agent"]), calls)
	}
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())
	retries, inTokens := 0, 0
	for _, c := range chats {
		if c.Name != "chat test-model" || c.SpanKind != trace.SpanKindClient {
			t.Errorf("chat span %q of kind %v", c.Name, c.SpanKind)
		}
		ag := byID[c.Parent.SpanID()]
		if !strings.HasPrefix(ag.Name, "invoke_agent ") || parent(ag) != "invoke_workflow writing" {
			t.Errorf("chat span under %q under %q", ag.Name, parent(ag))
		}
		if aa := attrs(ag); aa["gen_ai.agent.name"].AsString() == "" || aa["gen_ai.operation.name"].AsString() != "invoke_agent" || aa["troupe.decision"].AsString() == "" {
			t.Errorf("invoke_agent span without gen_ai.agent.name, gen_ai.operation.name = invoke_agent or troupe.decision: %v", ag.Attributes)
		}
		if c.SpanContext.TraceID() != ep.SpanContext.TraceID() {
			t.Errorf("chat span in trace %v, the episode in %v", c.SpanContext.TraceID(), ep.SpanContext.TraceID())
		}
		a := attrs(c)
		for k, want := range map[attribute.Key]any{
			"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai", "gen_ai.request.model": "test-model",
			"gen_ai.response.model": "test-model-served", "server.address": "127.0.0.1", "server.port": int64(port),
		} {
			if got := a[k].AsInterface(); got != want {
				t.Errorf("%s = %v (%T), want %v", k, got, got, want)
			}
		}
		if fr := a["gen_ai.response.finish_reasons"].AsStringSlice(); len(fr) != 1 || fr[0] != "stop" {
			t.Errorf("finish reasons %v", fr)
		}
		want, ok := srv.usage[a["gen_ai.response.id"].AsString()]
		if a["gen_ai.request.seed"].AsInt64() != want.seed || a["gen_ai.request.max_tokens"].AsInt64() != want.maxTokens ||
			math.Abs(a["gen_ai.request.temperature"].AsFloat64()-want.temperature) > 1e-6 || want.seed == 0 {
			t.Errorf("request seed, max_tokens, temperature %v %v %v; the server got %+v", a["gen_ai.request.seed"].AsInt64(),
				a["gen_ai.request.max_tokens"].AsInt64(), a["gen_ai.request.temperature"].AsFloat64(), want)
		}
		if !ok || a["gen_ai.usage.input_tokens"].AsInt64() != int64(want.prompt) || a["gen_ai.usage.output_tokens"].AsInt64() != int64(want.completion) {
			t.Errorf("response %v: tokens %v/%v, the server's %+v", a["gen_ai.response.id"], a["gen_ai.usage.input_tokens"], a["gen_ai.usage.output_tokens"], want)
		}
		inTokens += int(a["gen_ai.usage.input_tokens"].AsInt64())
		if a["troupe.llm.requests"].AsInt64() < 1 {
			t.Errorf("chat span with troupe.llm.requests %v", a["troupe.llm.requests"].String())
		}
		for _, e := range c.Events {
			if e.Name == "gen_ai.client.retry" {
				if a["troupe.llm.retries"].AsInt64() != 1 || a["troupe.llm.rate_limited"].AsInt64() != 1 || a["troupe.llm.requests"].AsInt64() != 2 {
					t.Errorf("the retried call's traffic: requests %v, retries %v, rate_limited %v; want 2, 1, 1", a["troupe.llm.requests"].String(),
						a["troupe.llm.retries"].String(), a["troupe.llm.rate_limited"].String())
				}
				retries++
				for _, kv := range e.Attributes {
					if kv.Key == "http.response.status_code" && kv.Value.AsInt64() != http.StatusTooManyRequests {
						t.Errorf("retry after status %v, want 429", kv.Value)
					}
				}
			}
		}
		for _, k := range []attribute.Key{"gen_ai.input.messages", "gen_ai.output.messages"} {
			if _, ok := a[k]; ok {
				t.Errorf("%s exported without capture_content", k)
			}
		}
	}
	if retries != 1 {
		t.Errorf("%d retry events, want 1 (the server's 429)", retries)
	}
	assertNoText(t, spans, srv.prompts)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var inHist int64
	var durations uint64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch m.Name {
			case "gen_ai.client.token.usage":
				for _, p := range m.Data.(metricdata.Histogram[int64]).DataPoints {
					if v, _ := p.Attributes.Value("gen_ai.token.type"); v.AsString() == "input" {
						inHist += p.Sum
					}
				}
			case "gen_ai.client.operation.duration":
				for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					durations += p.Count
				}
			}
		}
	}
	if inHist != int64(inTokens) || durations != uint64(calls) {
		t.Errorf("metrics: %d input tokens over %d calls, the spans %d over %d", inHist, durations, inTokens, calls)
	}
}

// assertNoText fails if any span attribute or event holds one of texts.
func assertNoText(t *testing.T, spans tracetest.SpanStubs, texts []string) {
	t.Helper()
	for _, s := range spans {
		kvs := append([]attribute.KeyValue(nil), s.Attributes...)
		for _, e := range s.Events {
			kvs = append(kvs, e.Attributes...)
		}
		for _, kv := range kvs {
			v := kv.Value.String()
			for _, p := range texts {
				if len(p) >= 16 && strings.Contains(v, p) {
					t.Fatalf("span %q attribute %s holds prompt text %q", s.Name, kv.Key, p)
				}
			}
		}
	}
}

// TestCaptureContentOptIn checks that capture_content puts the prompts and
// completions on the chat spans.
func TestCaptureContentOptIn(t *testing.T) {
	srv := newChatServer(t)
	tel, exp, _ := inMemory(t, true)
	playTraced(t, writingSetup(t, srv.URL, ""), tel)
	found := 0
	for _, s := range exp.GetSpans() {
		a := attrs(s)
		in, ok := a["gen_ai.input.messages"]
		if !ok {
			continue
		}
		found++
		var msgs []struct {
			Role  string
			Parts []struct{ Type, Content string }
		}
		if err := json.Unmarshal([]byte(in.AsString()), &msgs); err != nil || len(msgs) == 0 || msgs[0].Parts[0].Content == "" {
			t.Fatalf("gen_ai.input.messages %q: %v", in.AsString(), err)
		}
		if !strings.Contains(a["gen_ai.output.messages"].AsString(), "We describe the design") {
			t.Errorf("gen_ai.output.messages %q lacks the completion", a["gen_ai.output.messages"].AsString())
		}
	}
	if found == 0 {
		t.Fatal("no chat span holds gen_ai.input.messages with capture_content on")
	}
}

// simSetup builds the writing task with the simulated LLM.
func simSetup(t *testing.T) rollout.Setup {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agentfile.toml")
	if err := os.WriteFile(path, []byte("[env]\nsource = \"builtin:writing\"\n[env.params]\nwriters = 2\n[reward.weights]\nquality = 1.0\n[[rewards]]\nsource = \"builtin:writing.consistency\"\n[rollout]\nmax_steps = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := agentfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b.Setup
}

// TestSimulatedLLMSaysSim checks the provider of the simulated LLM's spans,
// and the backend on the episode span.
func TestSimulatedLLMSaysSim(t *testing.T) {
	tel, exp, _ := inMemory(t, false)
	playTraced(t, simSetup(t), tel)
	chats := 0
	for _, s := range exp.GetSpans() {
		if s.Name == "invoke_workflow writing" {
			if b := attrs(s)["troupe.llm.backend"].AsString(); b != "sim" {
				t.Errorf("episode span troupe.llm.backend %q, want sim", b)
			}
		}
		if strings.HasPrefix(s.Name, "chat ") {
			chats++
			a := attrs(s)
			if p := a["gen_ai.provider.name"].AsString(); p != telemetry.ProviderSim {
				t.Errorf("provider %q, want sim", p)
			}
			if _, ok := a["server.address"]; ok {
				t.Errorf("the simulated LLM has a server.address %v", a["server.address"])
			}
		}
	}
	if chats == 0 {
		t.Fatal("no chat span")
	}
}

// TestOffMakesNothing checks that telemetry that is off hands back the LLM
// itself and starts no span.
func TestOffMakesNothing(t *testing.T) {
	for _, tel := range []*telemetry.Telemetry{nil, mustStart(t, telemetry.DefaultConfig())} {
		var l core.LLM = fakeLLM{}
		if got := tel.WrapLLM(l, telemetry.Caller{}); got != l {
			t.Errorf("%v: WrapLLM wrapped the LLM", tel.Config())
		}
		ctx, s := tel.StartEpisode(context.Background(), "e", 1, 2)
		if trace.SpanFromContext(ctx).SpanContext().IsValid() {
			t.Errorf("%v: StartEpisode made a span", tel.Config())
		}
		s.End(nil)
	}
}

func mustStart(t *testing.T, c telemetry.Config) *telemetry.Telemetry {
	t.Helper()
	tel, err := telemetry.Start(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return tel
}

type fakeLLM struct{}

func (fakeLLM) Chat(context.Context, core.ChatRequest) (core.ChatResponse, error) {
	return core.ChatResponse{Text: "ok", Usage: core.Usage{PromptTokens: 10, CompletionTokens: 5, Backend: "fake"}}, nil
}

// TestConfigValidate checks that settings that cannot work are errors
// naming their key.
func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		cfg telemetry.Config
		key string
	}{
		{telemetry.Config{Exporter: "jaeger"}, "exporter"},
		{telemetry.Config{Exporter: "otlp", Protocol: "http/json"}, "protocol"},
		{telemetry.Config{Exporter: "otlp", Endpoint: "localhost:4318"}, "endpoint"},
		{telemetry.Config{Exporter: "stdout", Endpoint: "http://localhost:4318"}, "exporter"},
	} {
		err := c.cfg.Validate()
		se, ok := err.(*core.SettingError)
		if !ok || se.Key != c.key {
			t.Errorf("%+v: %v, want a setting error at %s", c.cfg, err, c.key)
		}
	}
	for _, c := range []telemetry.Config{telemetry.DefaultConfig(), {Exporter: "otlp", Protocol: "grpc", Endpoint: "https://collector:4317"}, {Exporter: "stdout", CaptureContent: true}} {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
}

// TestTrainingIteration checks that a training iteration is a span with
// its episodes under it, and that its figures are recorded as metrics.
func TestTrainingIteration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentfile.toml")
	af := "[env]\nsource = \"builtin:writing\"\n[env.params]\nwriters = 2\n[reward.weights]\nquality = 1.0\n" +
		"[[rewards]]\nsource = \"builtin:writing.consistency\"\n[rollout]\nmax_steps = 3\nworkers = 1\n" +
		"[train]\niterations = 1\ntasks_per_iteration = 1\ngroup_size = 2\nepochs = 1\nminibatches = 1\n"
	if err := os.WriteFile(path, []byte(af), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := agentfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	b, err := cfg.Build(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tel, exp, reader := inMemory(t, false)
	s := b.Setup
	s.Telemetry = tel
	tr, err := trainer.New(s, b.Train)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	st, _, err := tr.Step(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var iter trace.SpanID
	episodes := 0
	for _, sp := range exp.GetSpans() {
		if sp.Name == "train iteration 1" {
			iter = sp.SpanContext.SpanID()
			if got := attrs(sp)[telemetry.MetricRewardMean].AsFloat64(); got != st.RewardMean {
				t.Errorf("iteration span reward mean %v, want %v", got, st.RewardMean)
			}
		}
	}
	for _, sp := range exp.GetSpans() {
		if strings.HasPrefix(sp.Name, "invoke_workflow ") && sp.Parent.SpanID() == iter && iter.IsValid() {
			episodes++
		}
	}
	if episodes != st.Episodes || episodes != 2 {
		t.Errorf("%d episode spans under the iteration span, the iteration played %d", episodes, st.Episodes)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			found[m.Name] = true
			if m.Name == telemetry.MetricRewardMean {
				if p := m.Data.(metricdata.Gauge[float64]).DataPoints; len(p) != 1 || p[0].Value != st.RewardMean {
					t.Errorf("%s points %v, want %v", m.Name, p, st.RewardMean)
				}
			}
			if m.Name == telemetry.MetricEpisodes {
				if p := m.Data.(metricdata.Sum[int64]).DataPoints; len(p) != 1 || p[0].Value != int64(st.Episodes) {
					t.Errorf("%s points %v, want %d", m.Name, p, st.Episodes)
				}
			}
		}
	}
	for _, name := range []string{telemetry.MetricRewardMean, telemetry.MetricKL, telemetry.MetricClipFraction, telemetry.MetricEntropy,
		telemetry.MetricGradNorm, telemetry.MetricEpisodes, telemetry.MetricFailedEpisodes, telemetry.MetricEnvStepRate,
		"gen_ai.client.token.usage", "gen_ai.client.operation.duration"} {
		if !found[name] {
			t.Errorf("no metric %s", name)
		}
	}
}

// TestStartOTLPHTTP checks that Start's OTLP/HTTP exporter sends the spans
// and metrics to the endpoint when shut down, and that a protocol the
// environment names that troupe cannot send is an error at protocol.
func TestStartOTLPHTTP(t *testing.T) {
	var mu sync.Mutex
	paths := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths[r.URL.Path]++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer srv.Close()
	tel, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterOTLP, Endpoint: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	chatOnce(t, tel)
	mu.Lock()
	defer mu.Unlock()
	if paths["/v1/traces"] == 0 || paths["/v1/metrics"] == 0 {
		t.Errorf("the collector got %v, want /v1/traces and /v1/metrics", paths)
	}

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err = telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterOTLP})
	if se, ok := err.(*core.SettingError); !ok || se.Key != "protocol" {
		t.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=http/json: %v, want a setting error at protocol", err)
	}
}

func TestProviderName(t *testing.T) {
	for in, want := range map[string]string{"sim": "sim", "openai": "openai", "replay:openai": "replay", "record:openai": "openai", "auto:openai": "openai", "replay": "replay"} {
		if got := telemetry.ProviderName(in); got != want {
			t.Errorf("ProviderName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestReplayedCompletionsSayReplay checks the provider of completions
// replayed from a recording: "replay", with no server reached.
func TestReplayedCompletionsSayReplay(t *testing.T) {
	srv := newChatServer(t)
	cache := t.TempDir()
	rec, _, _ := inMemory(t, false)
	playTraced(t, writingSetup(t, srv.URL, fmt.Sprintf("cache = %q\ncache_mode = \"record\"", cache)), rec)
	asked := srv.n
	tel, exp, reader := inMemory(t, false)
	playTraced(t, writingSetup(t, srv.URL, fmt.Sprintf("cache = %q\ncache_mode = \"replay\"", cache)), tel)
	if srv.n != asked {
		t.Fatalf("the replay asked the server %d times", srv.n-asked)
	}
	chats, latency := 0, 0.0
	for _, s := range exp.GetSpans() {
		if strings.HasPrefix(s.Name, "chat ") {
			chats++
			if p := attrs(s)["gen_ai.provider.name"].AsString(); p != telemetry.ProviderReplay {
				t.Errorf("a replayed completion's provider is %q", p)
			}
			latency += attrs(s)["troupe.llm.latency_s"].AsFloat64()
		}
	}
	if chats == 0 {
		t.Fatal("no chat span")
	}
	// The duration of a replayed call is the recorded call's latency.
	var sum float64
	for _, p := range durationPoints(t, reader) {
		if v, _ := p.Attributes.Value("gen_ai.provider.name"); v.AsString() == telemetry.ProviderReplay {
			sum += p.Sum
		}
	}
	if latency <= 0 || math.Abs(sum-latency) > 1e-9 {
		t.Errorf("replayed durations sum to %v s, the recorded latencies to %v s", sum, latency)
	}
}

type failingLLM struct{}

func (failingLLM) Chat(context.Context, core.ChatRequest) (core.ChatResponse, error) {
	return core.ChatResponse{}, &os.PathError{Op: "post", Path: "/v1/chat/completions", Err: os.ErrDeadlineExceeded}
}

// TestFailedCallIsAnError checks that a failed call's spans carry the
// error, and its duration point the error.type.
func TestFailedCallIsAnError(t *testing.T) {
	tel, exp, reader := inMemory(t, false)
	l := tel.WrapLLM(failingLLM{}, telemetry.Caller{AgentName: "a", Backend: "openai"})
	if _, err := l.Chat(context.Background(), core.ChatRequest{Model: "m"}); err == nil {
		t.Fatal("no error")
	}
	for _, s := range exp.GetSpans() {
		if s.Status.Code.String() != "Error" || s.Status.Description == "" {
			t.Errorf("span %q status %v", s.Name, s.Status)
		}
		if s.Name == "chat m" && attrs(s)["error.type"].AsString() != "*fs.PathError" {
			t.Errorf("chat span error.type %v", attrs(s)["error.type"])
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	points := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name == "gen_ai.client.operation.duration" {
				for _, p := range m.Data.(metricdata.Histogram[float64]).DataPoints {
					if v, ok := p.Attributes.Value("error.type"); ok && v.AsString() != "" {
						points++
					}
				}
			}
			if m.Name == "gen_ai.client.token.usage" {
				t.Errorf("a failed call recorded token usage")
			}
		}
	}
	if points != 1 {
		t.Errorf("%d duration points with error.type, want 1", points)
	}
}

// TestPrometheusEndpoint checks that prometheus = ADDR serves the metrics
// at /metrics, with no span exporter, until Shutdown.
func TestPrometheusEndpoint(t *testing.T) {
	tel, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterNone, Prometheus: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	l := tel.WrapLLM(fakeLLM{}, telemetry.Caller{AgentName: "a", Backend: "openai"})
	if _, err := l.Chat(context.Background(), core.ChatRequest{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + tel.PrometheusAddr() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"gen_ai_client_token_usage", "gen_ai_client_operation_duration", `gen_ai_token_type="input"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s:\n%.2000s", want, body)
		}
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + tel.PrometheusAddr() + "/metrics"); err == nil {
		t.Error("/metrics still served after Shutdown")
	}
	if _, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterNone, Prometheus: "9464"}); err == nil {
		t.Error("prometheus = \"9464\" (no colon) accepted")
	}
}
