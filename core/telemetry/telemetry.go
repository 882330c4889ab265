// Package telemetry makes troupe's runs observable with OpenTelemetry, in
// the GenAI semantic conventions (semconv v1.41.0): a span per training
// iteration, under it one per episode (invoke_workflow), one per agent
// decision that calls an LLM (invoke_agent) and one per LLM call (chat
// {model}); the gen_ai.client.* histograms and the training figures as
// metrics. The agentfile's [telemetry] table ([Config]) chooses where they
// go; with the default exporter "none" nothing is made, so telemetry off
// costs nothing.
//
// A [*Telemetry] travels in rollout.Setup; a nil one is off. Spans find
// their parents through the context.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/genai"
)

// instrumentation is the name of troupe's tracer and meter.
const instrumentation = "github.com/troupe-dev/troupe"

// Telemetry makes a run's spans and records its metrics. A nil
// *Telemetry, or one whose exporter is "none" with no Prometheus address,
// is off: its methods do nothing. It is safe for concurrent use.
type Telemetry struct {
	cfg      Config
	tracer   trace.Tracer // nil when off
	shutdown []func(context.Context) error
	promAddr string
	spans    *spanCounts // nil unless Start made the span exporter

	tokenUsage genaiconv.ClientTokenUsage
	duration   genaiconv.ClientOperationDuration
	training   trainingInstruments
}

// Start returns the telemetry cfg describes, with its exporters running
// and, if cfg.Prometheus is set, its /metrics endpoint listening;
// [Telemetry.Shutdown] flushes and stops them. With the exporter "none"
// and no Prometheus address it starts nothing. Errors about a setting are
// *core.SettingError values.
func Start(ctx context.Context, cfg Config) (*Telemetry, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	traces, metrics, err := signals()
	if err != nil {
		return nil, err
	}
	if cfg.off() || (!traces && !metrics && cfg.Prometheus == "") {
		return &Telemetry{cfg: cfg}, nil
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(),
		resource.WithAttributes(genai.ServiceName.String(cfg.serviceName())))
	if err != nil {
		return nil, fmt.Errorf("telemetry: resource: %w", err)
	}
	var readers []sdkmetric.Option
	var tp trace.TracerProvider = tracenoop.NewTracerProvider() // no spans: metrics only
	var shutdown []func(context.Context) error
	var ended *spanCounts
	if cfg.Exporter != ExporterNone && (traces || metrics) {
		spans, points, err := exporters(ctx, cfg, traces, metrics)
		if err != nil {
			return nil, err
		}
		if spans != nil {
			opts, err := batchOptions()
			if err != nil {
				if points != nil {
					err = errors.Join(err, points.Shutdown(ctx))
				}
				return nil, err
			}
			ended = &spanCounts{}
			sdktp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(ended),
				sdktrace.WithBatcher(countedExporter{spans, ended}, opts...), sdktrace.WithResource(res))
			tp, shutdown = sdktp, append(shutdown, sdktp.Shutdown)
		}
		if points != nil {
			readers = append(readers, sdkmetric.WithReader(sdkmetric.NewPeriodicReader(points)))
		}
	}
	var prom *promEndpoint
	if cfg.Prometheus != "" {
		if prom, err = startPrometheus(cfg.Prometheus); err != nil {
			return nil, errors.Join(err, shutdownAll(ctx, shutdown))
		}
		readers = append(readers, sdkmetric.WithReader(prom.reader))
		shutdown = append(shutdown, prom.shutdown)
	}
	mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
	shutdown = append(shutdown, mp.Shutdown)
	t, err := New(cfg, tp, mp)
	if err != nil {
		return nil, errors.Join(err, shutdownAll(ctx, shutdown))
	}
	t.shutdown, t.spans = shutdown, ended
	if prom != nil {
		t.promAddr = prom.addr
	}
	return t, nil
}

// spanCounts counts the spans that ended and those the exporter was given;
// the difference, once the queue is flushed, is what the queue dropped.
// It is a span processor that does nothing but count.
type spanCounts struct{ ended, exported atomic.Int64 }

func (*spanCounts) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (c *spanCounts) OnEnd(s sdktrace.ReadOnlySpan) {
	if s.SpanContext().IsSampled() {
		c.ended.Add(1)
	}
}
func (*spanCounts) Shutdown(context.Context) error   { return nil }
func (*spanCounts) ForceFlush(context.Context) error { return nil }

// countedExporter is a span exporter that counts what it is given.
type countedExporter struct {
	sdktrace.SpanExporter
	c *spanCounts
}

func (e countedExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.c.exported.Add(int64(len(spans)))
	return e.SpanExporter.ExportSpans(ctx, spans)
}

// DroppedSpans returns how many spans the span queue dropped because it
// was full (raise $OTEL_BSP_MAX_QUEUE_SIZE if they are many): after
// [Telemetry.Shutdown], every span that ended and was not exported. Before
// it, spans still queued count too. 0 for telemetry not made by Start.
func (t *Telemetry) DroppedSpans() int64 {
	if t == nil || t.spans == nil {
		return 0
	}
	return t.spans.ended.Load() - t.spans.exported.Load()
}

// shutdownAll calls every function of fs.
func shutdownAll(ctx context.Context, fs []func(context.Context) error) error {
	var errs []error
	for _, f := range fs {
		errs = append(errs, f(ctx))
	}
	return errors.Join(errs...)
}

// promEndpoint is the Prometheus /metrics endpoint of [Config.Prometheus].
type promEndpoint struct {
	reader   sdkmetric.Reader
	addr     string
	shutdown func(context.Context) error
}

// startPrometheus serves the metrics in the Prometheus text format at
// http://addr/metrics.
func startPrometheus(addr string) (*promEndpoint, error) {
	reg := prometheus.NewRegistry()
	reader, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("telemetry: prometheus exporter: %w", err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, core.NewSettingError("prometheus", "cannot listen: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return &promEndpoint{reader: reader, addr: ln.Addr().String(), shutdown: srv.Shutdown}, nil
}

// PrometheusAddr returns the address the /metrics endpoint listens on
// ("" without one): [Config.Prometheus] with its port resolved.
func (t *Telemetry) PrometheusAddr() string {
	if t == nil {
		return ""
	}
	return t.promAddr
}

// The environment variables of the OpenTelemetry SDK troupe reads itself.
const (
	// EnvTracesExporter = "none" exports no spans (other values are left
	// to the [telemetry] table's exporter).
	EnvTracesExporter = "OTEL_TRACES_EXPORTER"
	// EnvMetricsExporter = "none" exports no metrics (the Prometheus
	// endpoint, if any, still serves them).
	EnvMetricsExporter = "OTEL_METRICS_EXPORTER"
	// EnvSpanQueueSize is the most spans waiting to be exported
	// ([DefaultSpanQueueSize] when unset); past it spans are dropped.
	EnvSpanQueueSize = "OTEL_BSP_MAX_QUEUE_SIZE"
)

// DefaultSpanQueueSize is the span queue's size when $OTEL_BSP_MAX_QUEUE_SIZE
// is unset: four times the SDK's 2048, so that a burst of fast simulated
// calls (two spans each) waits for the exporter instead of being dropped.
const DefaultSpanQueueSize = 8192

// signals reports which signals the environment leaves on:
// $OTEL_TRACES_EXPORTER and $OTEL_METRICS_EXPORTER = "none" turn them off.
func signals() (traces, metrics bool, err error) {
	for _, v := range []string{EnvTracesExporter, EnvMetricsExporter} {
		if val := strings.TrimSpace(os.Getenv(v)); strings.Contains(val, ",") && slices.Contains(strings.Split(val, ","), "none") {
			return false, false, fmt.Errorf("telemetry: $%s is %q: \"none\" cannot be listed with another exporter", v, val)
		}
	}
	return strings.TrimSpace(os.Getenv(EnvTracesExporter)) != "none", strings.TrimSpace(os.Getenv(EnvMetricsExporter)) != "none", nil
}

// batchOptions returns the span batcher's options: a queue of
// [DefaultSpanQueueSize] unless $OTEL_BSP_MAX_QUEUE_SIZE says otherwise
// (the SDK reads it, and the other OTEL_BSP_* variables, itself).
func batchOptions() ([]sdktrace.BatchSpanProcessorOption, error) {
	v, ok := os.LookupEnv(EnvSpanQueueSize)
	if !ok || strings.TrimSpace(v) == "" {
		return []sdktrace.BatchSpanProcessorOption{sdktrace.WithMaxQueueSize(DefaultSpanQueueSize)}, nil
	}
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err != nil || n <= 0 {
		return nil, fmt.Errorf("telemetry: $%s is %q, want a positive number of spans", EnvSpanQueueSize, v)
	}
	return nil, nil
}

// exporters returns the span and metric exporters of cfg, nil for a
// signal that is off.
func exporters(ctx context.Context, cfg Config, traces, metrics bool) (sdktrace.SpanExporter, sdkmetric.Exporter, error) {
	var s sdktrace.SpanExporter
	var m sdkmetric.Exporter
	var err error
	if cfg.Exporter == ExporterStdout {
		w := cfg.Output
		if w == nil {
			w = os.Stdout
		}
		if traces {
			if s, err = stdouttrace.New(stdouttrace.WithWriter(w)); err != nil {
				return nil, nil, fmt.Errorf("telemetry: stdout exporter: %w", err)
			}
		}
		if metrics {
			if m, err = stdoutmetric.New(stdoutmetric.WithWriter(w)); err != nil {
				return nil, nil, fmt.Errorf("telemetry: stdout exporter: %w", err)
			}
		}
		return s, m, nil
	}
	proto, err := cfg.protocol()
	if err != nil {
		return nil, nil, err
	}
	// Endpoint is a base URL, as $OTEL_EXPORTER_OTLP_ENDPOINT is: the
	// HTTP exporters append /v1/traces and /v1/metrics to its path.
	var host, path string
	var insecure bool
	if cfg.Endpoint != "" {
		u, _ := url.Parse(cfg.Endpoint) // Validate parsed it
		host, path, insecure = u.Host, strings.TrimRight(u.Path, "/"), u.Scheme == "http"
	}
	if proto == ProtocolGRPC {
		var to []otlptracegrpc.Option
		var mo []otlpmetricgrpc.Option
		if host != "" {
			to, mo = append(to, otlptracegrpc.WithEndpoint(host)), append(mo, otlpmetricgrpc.WithEndpoint(host))
		}
		if insecure {
			to, mo = append(to, otlptracegrpc.WithInsecure()), append(mo, otlpmetricgrpc.WithInsecure())
		}
		if traces {
			s, err = otlptracegrpc.New(ctx, to...)
		}
		if err == nil && metrics {
			m, err = otlpmetricgrpc.New(ctx, mo...)
		}
	} else {
		var to []otlptracehttp.Option
		var mo []otlpmetrichttp.Option
		if host != "" {
			to = append(to, otlptracehttp.WithEndpoint(host), otlptracehttp.WithURLPath(path+"/v1/traces"))
			mo = append(mo, otlpmetrichttp.WithEndpoint(host), otlpmetrichttp.WithURLPath(path+"/v1/metrics"))
		}
		if insecure {
			to, mo = append(to, otlptracehttp.WithInsecure()), append(mo, otlpmetrichttp.WithInsecure())
		}
		if traces {
			s, err = otlptracehttp.New(ctx, to...)
		}
		if err == nil && metrics {
			m, err = otlpmetrichttp.New(ctx, mo...)
		}
	}
	if err != nil {
		if s != nil {
			err = errors.Join(err, s.Shutdown(ctx))
		}
		return nil, nil, fmt.Errorf("telemetry: otlp %s exporter: %w", proto, err)
	}
	return s, m, nil
}

// New returns telemetry that makes its spans with tp and records its
// metrics with mp, providers the caller owns (a program that has its own,
// or a test with an in-memory exporter). cfg's exporter settings are not
// used; with the exporter "none" and no Prometheus address the telemetry
// is off.
func New(cfg Config, tp trace.TracerProvider, mp metric.MeterProvider) (*Telemetry, error) {
	t := &Telemetry{cfg: cfg}
	if cfg.off() {
		return t, nil
	}
	t.tracer = tp.Tracer(instrumentation, trace.WithSchemaURL(genai.SchemaURL))
	meter := mp.Meter(instrumentation, metric.WithSchemaURL(genai.SchemaURL))
	var err error
	if t.tokenUsage, err = genaiconv.NewClientTokenUsage(meter); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if t.duration, err = genaiconv.NewClientOperationDuration(meter); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	if t.training, err = newTrainingInstruments(meter); err != nil {
		return nil, fmt.Errorf("telemetry: %w", err)
	}
	return t, nil
}

// Enabled reports whether t makes spans and records metrics.
func (t *Telemetry) Enabled() bool { return t != nil && t.tracer != nil }

// Config returns the settings t was made from (the zero Config for nil).
func (t *Telemetry) Config() Config {
	if t == nil {
		return Config{}
	}
	return t.cfg
}

// Shutdown flushes what is buffered and stops the exporters Start
// started. It is idempotent.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	var errs []error
	for _, f := range t.shutdown {
		errs = append(errs, f(ctx))
	}
	t.shutdown = nil
	return errors.Join(errs...)
}

// Span is a span of troupe's, ended by its End. The zero Span (what
// telemetry that is off returns) does nothing.
type Span struct {
	t    *Telemetry
	span trace.Span
}

// recording reports whether s records.
func (s Span) recording() bool { return s.span != nil }

// Recording reports whether s records (what telemetry that is off returns
// does not), so that a caller builds a span's attributes only for a
// span that keeps them.
func (s Span) Recording() bool { return s.recording() }

// SetBackend records the LLM backend(s) of an episode's agents on its span
// (troupe.llm.backend): "sim", "openai", "replay:openai"…; several,
// comma-separated, when the agents' differ.
func (s Span) SetBackend(backend string) {
	if s.recording() {
		s.span.SetAttributes(genai.Backend.String(backend))
	}
}

// End ends the span; a non-nil err marks it failed with err's message
// and type.
func (s Span) End(err error) {
	if !s.recording() {
		return
	}
	if err != nil {
		s.span.RecordError(err)
		s.span.SetStatus(codes.Error, err.Error())
		s.span.SetAttributes(semconv.ErrorType(err)) // the key is genai.ErrorType
	}
	s.span.End()
}

// StartEpisode starts the invoke_workflow span of one episode of env, a
// child of ctx's span (the iteration's, in training). Its
// gen_ai.conversation.id is the episode's key, "ENV/TASK/ROLLOUT" from
// the task (env) seed and the rollout seed.
func (t *Telemetry) StartEpisode(ctx context.Context, env string, task, rollout uint64) (context.Context, Span) {
	if !t.Enabled() {
		return ctx, Span{}
	}
	key := env + "/" + strconv.FormatUint(task, 10) + "/" + strconv.FormatUint(rollout, 10)
	ctx, s := t.tracer.Start(ctx, genai.SpanInvokeWorkflow+env, trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(genai.OperationInvokeWorkflow, genai.WorkflowName.String(env), genai.ConversationID.String(key)))
	return ctx, Span{t: t, span: s}
}

// Episode records what an episode came to on its span: its steps, its
// joint reward, and each reward component as a gen_ai.evaluation.result
// event; failed episodes their reason.
func (s Span) Episode(steps int, reward float64, components map[string]float64, failed bool, reason string) {
	if !s.recording() {
		return
	}
	s.span.SetAttributes(genai.EpisodeSteps.Int(steps), genai.EpisodeFailed.Bool(failed))
	if failed {
		s.span.SetAttributes(genai.EpisodeFailure.String(reason))
		s.span.SetStatus(codes.Error, reason)
		return
	}
	s.span.SetAttributes(genai.EpisodeReward.Float64(reward))
	for _, name := range sortedKeys(components) {
		s.span.AddEvent(genai.EventEvaluation, trace.WithAttributes(
			genai.EvaluationName.String(name), genai.EvaluationScoreValue.Float64(components[name])))
	}
}

// StartIteration starts the span of training iteration n (from 1), the
// parent of its episodes' spans.
func (t *Telemetry) StartIteration(ctx context.Context, n int) (context.Context, Span) {
	if !t.Enabled() {
		return ctx, Span{}
	}
	ctx, s := t.tracer.Start(ctx, genai.SpanIteration+strconv.Itoa(n), trace.WithAttributes(genai.Iteration.Int(n)))
	return ctx, Span{t: t, span: s}
}
