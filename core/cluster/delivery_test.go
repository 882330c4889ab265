package cluster_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/core/agentfile"
	"github.com/troupe-dev/troupe/core/cluster"
	"github.com/troupe-dev/troupe/core/rollout"
	"github.com/troupe-dev/troupe/core/telemetry"
	"github.com/troupe-dev/troupe/core/trainer"
	"github.com/troupe-dev/troupe/internal/testenv"
)

// limitedServer is an OpenAI-compatible server that answers 429 to the
// first limited requests (all when limited < 0) and a section to the
// others; it records when each request came.
type limitedServer struct {
	limited int
	mu      sync.Mutex
	times   []time.Time
}

func (l *limitedServer) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.times = append(l.times, time.Now())
		n := len(l.times)
		l.mu.Unlock()
		if l.limited < 0 || n <= l.limited {
			http.Error(w, `{"error":{"message":"Rate limit reached","type":"requests"}}`, http.StatusTooManyRequests)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c", "object": "chat.completion", "model": "m",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": "## S\n\nWe write.\n"}}},
			"usage":   map[string]any{"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// oneWriter is the writing task with one writer whose LLM (no retries of
// its own) is at url.
func oneWriter(url string) string {
	text := writingProject(url, 1)
	text = strings.Replace(text, "writers = 4", "writers = 1", 1)
	text = strings.Replace(text, "count = 4", "count = 1", 1)
	return strings.Replace(text, `timeout = "30s"`, "timeout = \"30s\"\nmax_retries = 0", 1)
}

// A worker whose episode is rate-limited by the LLM (429) hands the job
// back instead of failing it (with max_deliver 1, a Nak or a failed
// delivery would fail the episode), pausing rate_limit_pause and then
// twice that; after max_rate_limited hand-backs the episode fails.
func TestRateLimitedJobIsHandedBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := delivery(5*time.Second, 1)
	cfg.RateLimitPause, cfg.MaxRateLimited = 150*time.Millisecond, 2
	for _, tc := range []struct {
		name    string
		limited int
		failed  bool
	}{{"recovers", 2, false}, {"gives up", -1, true}} {
		t.Run(tc.name, func(t *testing.T) { rateLimitCase(ctx, t, cfg, tc.name, tc.limited, tc.failed) })
	}
}

// rateLimitCase plays one job whose LLM answers 429 to the first
// limited requests (every one when negative) and checks its outcome.
func rateLimitCase(ctx context.Context, t *testing.T, cfg cluster.Config, name string, limited int, failed bool) {
	url := startServer(t)
	llm := &limitedServer{limited: limited}
	srv := llm.start(t)
	c, b := clusterSetup(ctx, t, url, oneWriter(srv.URL), cfg)
	ws := startWorkers(t, url, 1, t.TempDir(), nil)
	res := sample(ctx, t, c, b, 1, rollout.Job{Task: 2, Rollout: 3})
	if n := ws[0].HandedBack(); n != 2 {
		t.Errorf("%s: %d hand-backs, want 2", name, n)
	}
	if res[0].Failed != failed {
		t.Fatalf("%s: failed %v (%s), want %v", name, res[0].Failed, res[0].Reason, failed)
	}
	if failed && !strings.Contains(res[0].Reason, "rate-limited by the LLM on 3 tries") || failed && !strings.Contains(res[0].Reason, "429") {
		t.Errorf("%s: reason %q", name, res[0].Reason)
	}
	// The worker paused 150 ms after the first rate-limited episode
	// and 300 ms after the second before it played the job again.
	llm.mu.Lock()
	times := llm.times
	llm.mu.Unlock()
	if len(times) < 3 {
		t.Fatalf("%s: %d requests", name, len(times))
	}
	if d1, d2 := times[1].Sub(times[0]), times[2].Sub(times[1]); d1 < 150*time.Millisecond || d2 < 300*time.Millisecond {
		t.Errorf("%s: the tries came %v and %v apart, want at least 150ms and 300ms", name, d1, d2)
	}
}

// The pause doubles with each rate-limited episode in a row, up to 8×,
// and an episode that is not rate-limited resets it.
func TestRateLimitPauseDoubles(t *testing.T) {
	url := startServer(t)
	w, err := cluster.NewWorker(context.Background(), connect(t, url), agentfile.OpenResolved, workerOpts(1, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var got []time.Duration
	for range 5 {
		got = append(got, cluster.Paused(w, true, time.Millisecond))
	}
	cluster.Paused(w, false, time.Millisecond)
	got = append(got, cluster.Paused(w, true, time.Millisecond))
	want := []time.Duration{1, 2, 4, 8, 8, 1}
	for i := range want {
		if got[i] != want[i]*time.Millisecond {
			t.Fatalf("pauses %v, want %v ms", got, want)
		}
	}
}

// The trainer warns when no worker has taken its jobs after warn_after,
// and not while a worker is playing one.
func TestWarnsWithoutWorkers(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := clusterOptions()
	cfg.WarnAfter = 200 * time.Millisecond
	var logs testenv.SyncBuffer
	text := strings.Replace(project, "CREDIT", "", 1)
	parsed, err := agentfile.Parse("agentfile.toml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	resolved, _ := parsed.Resolved().Encode()
	c, err := cluster.NewClient(ctx, connect(t, url), resolved, nil, cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b, err := parsed.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pol, err := policyFor(b)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := c.Sample(ctx, 1, []rollout.Job{{Task: 2, Rollout: 3}}, pol)
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logs.String(), "no worker has taken the 1 jobs of iteration 1 after") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "troupe worker --nats "+url) {
		t.Fatalf("no warning without workers: %q", logs.String())
	}
	// A worker that takes its time: it holds the job, so no more warnings.
	// (Its hook is set before it runs: setting it on a running worker
	// races with the job it may already be writing.)
	w, err := cluster.NewWorker(ctx, connect(t, url), agentfile.OpenResolved, workerOpts(1, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	var held atomic.Bool
	cluster.SetBeforeWrite(w, func(cluster.Job) bool {
		held.Store(true)
		time.Sleep(time.Second)
		return true
	})
	wctx, stop := context.WithCancel(ctx)
	ran := make(chan struct{})
	go func() { defer close(ran); _ = w.Run(wctx) }()
	defer func() { stop(); <-ran }()
	for !held.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	before := strings.Count(logs.String(), "no worker has taken")
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if after := strings.Count(logs.String(), "no worker has taken"); after != before {
		t.Errorf("warned %d times while a worker held the job:\n%s", after-before, logs.String())
	}
}

// A worker closes a run's setup (its env instances; the close function
// of OpenFunc) after idle without a job of it, and opens it again for the
// next job.
func TestWorkerClosesIdleSetups(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, b := clusterSetup(ctx, t, url, strings.Replace(project, "CREDIT", "", 1), clusterOptions())
	var opened, closed atomic.Int32
	counting := func(ctx context.Context, text []byte, plugins []cluster.Plugin) (*rollout.Setup, func(), error) {
		s, done, err := agentfile.OpenResolved(ctx, text, plugins)
		if err != nil {
			return nil, nil, err
		}
		opened.Add(1)
		return s, func() { closed.Add(1); done() }, nil
	}
	o := workerOpts(1, t.TempDir())
	o.Idle = time.Second
	w, stop := runWorker(ctx, t, url, counting, o)
	defer stop()
	pol, err := policyFor(b)
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 2; round++ {
		if _, err := c.Sample(ctx, round, []rollout.Job{{Task: 2, Rollout: 3}}, pol); err != nil {
			t.Fatal(err)
		}
		if n := w.OpenSetups(); n != 1 || closed.Load() != int32(round-1) {
			t.Fatalf("round %d: %d setups open, %d closed right after the job", round, n, closed.Load())
		}
		deadline := time.Now().Add(10 * time.Second)
		for w.OpenSetups() > 0 && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if w.OpenSetups() != 0 || closed.Load() != int32(round) || opened.Load() != int32(round) {
			t.Fatalf("round %d: %d setups open after idle; opened %d, closed %d", round, w.OpenSetups(), opened.Load(), closed.Load())
		}
	}
}

// The trace context of the trainer's call travels in the job's headers:
// the worker plays the episode in that trace (and a handed-back job keeps
// it).
func TestTraceContextTravels(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, b := clusterSetup(ctx, t, url, strings.Replace(project, "CREDIT", "", 1), clusterOptions())
	ws := startWorkers(t, url, 1, t.TempDir(), nil)
	var mu sync.Mutex
	var seen []trace.SpanContext
	cluster.SetOnPlay(ws[0], func(ctx context.Context, _ cluster.Job) {
		mu.Lock()
		seen = append(seen, trace.SpanContextFromContext(ctx))
		mu.Unlock()
	})
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
	sample(trace.ContextWithSpanContext(ctx, sc), t, c, b, 1, rollout.Job{Task: 2, Rollout: 3}, rollout.Job{Task: 2, Rollout: 4})
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("%d episodes played", len(seen))
	}
	for _, s := range seen {
		if s.TraceID() != tid || s.SpanID() != sid || !s.IsRemote() || !s.IsSampled() {
			t.Errorf("the episode was played in trace %s span %s (remote %v), want %s %s", s.TraceID(), s.SpanID(), s.IsRemote(), tid, sid)
		}
	}
}

// Results of another run, and of an older iteration of this run, already
// in the bucket are not read: the trainer waits for its own.
func TestForeignResultsIgnored(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, b := clusterSetup(ctx, t, url, strings.Replace(project, "CREDIT", "", 1), clusterOptions())
	js, err := jetstream.New(connect(t, url))
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, cluster.ResultBucket)
	if err != nil {
		t.Fatal(err)
	}
	// The first call of the client is batch 1; it plays iteration 2.
	for _, j := range []cluster.Job{{Run: "other-run", Iteration: 2, Batch: 1}, {Run: c.Run(), Iteration: 1, Batch: 1}} {
		data, err := cluster.EncodeResult(j, rollout.EpisodeResult{Failed: true, Reason: "stale result of " + j.Key()})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Create(ctx, j.Key(), data); err != nil {
			t.Fatal(err)
		}
	}
	startWorkers(t, url, 1, t.TempDir(), nil)
	res := sample(ctx, t, c, b, 2, rollout.Job{Task: 2, Rollout: 3})
	if res[0].Failed || res[0].Episode.Seed != 2 {
		t.Errorf("the trainer read %q (failed %v, seed %d), not its own result", res[0].Reason, res[0].Failed, res[0].Episode.Seed)
	}
}

// With telemetry on at both ends, an episode played on a worker is a
// span of the trainer's trace: the child of its iteration's span.
func TestEpisodeSpansInTrainerTrace(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	traced := func(tb testing.TB) (*telemetry.Telemetry, *tracetest.InMemoryExporter) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		tb.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		tel, err := telemetry.New(telemetry.Config{Exporter: telemetry.ExporterStdout}, tp, sdkmetric.NewMeterProvider())
		if err != nil {
			tb.Fatal(err)
		}
		return tel, exp
	}
	workerTel, workerSpans := traced(t)
	withTelemetry := func(ctx context.Context, text []byte, plugins []cluster.Plugin) (*rollout.Setup, func(), error) {
		s, done, err := agentfile.OpenResolved(ctx, text, plugins)
		if err == nil {
			s.Telemetry = workerTel
		}
		return s, done, err
	}
	_, stop := runWorker(ctx, t, url, withTelemetry, workerOpts(1, t.TempDir()))
	defer stop()

	c, b := clusterSetup(ctx, t, url, strings.Replace(project, "CREDIT", "", 1), clusterOptions())
	trainerTel, trainerSpans := traced(t)
	s := b.Setup
	s.Telemetry = trainerTel
	tr, err := trainer.NewWithSampler(s, b.Train, c)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, _, err := tr.Step(ctx); err != nil {
		t.Fatal(err)
	}
	var iteration tracetest.SpanStub
	for _, sp := range trainerSpans.GetSpans() {
		if strings.HasPrefix(sp.Name, "train iteration") {
			iteration = sp
		}
	}
	if !iteration.SpanContext.IsValid() {
		t.Fatalf("no iteration span among the trainer's %d spans", len(trainerSpans.GetSpans()))
	}
	episodes := 0
	for _, sp := range workerSpans.GetSpans() {
		if !strings.HasPrefix(sp.Name, "invoke_workflow") {
			continue
		}
		episodes++
		if sp.SpanContext.TraceID() != iteration.SpanContext.TraceID() || sp.Parent.SpanID() != iteration.SpanContext.SpanID() {
			t.Errorf("episode span %s: trace %s parent %s, want trace %s parent %s", sp.Name, sp.SpanContext.TraceID(), sp.Parent.SpanID(), iteration.SpanContext.TraceID(), iteration.SpanContext.SpanID())
		}
	}
	if want := b.Train.TasksPerIteration * b.Train.GroupSize; episodes != want {
		t.Errorf("the worker made %d episode spans, want %d", episodes, want)
	}
}

// A trainer that stops waiting (its context ends: Ctrl-C) withdraws the
// jobs no worker has taken, so none is played for nothing.
func TestCancelWithdrawsJobs(t *testing.T) {
	url := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, b := clusterSetup(ctx, t, url, strings.Replace(project, "CREDIT", "", 1), clusterOptions())
	pol, err := policyFor(b)
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithTimeout(ctx, 300*time.Millisecond)
	defer stop()
	if _, err := c.Sample(sctx, 1, []rollout.Job{{Task: 2, Rollout: 3}, {Task: 2, Rollout: 4}}, pol); err == nil {
		t.Fatal("Sample without workers returned before its context ended")
	}
	js, err := jetstream.New(connect(t, url))
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, cluster.JobStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Errorf("%d jobs left in the stream after the trainer stopped waiting", info.State.Msgs)
	}
}
