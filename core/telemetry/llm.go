package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/internal/genai"
)

// Provider names of the LLMs that are no service: the simulated LLM and
// replayed recordings.
const (
	ProviderSim    = "sim"
	ProviderReplay = "replay"
)

// Caller says who calls an LLM and where it goes: the attributes of its
// invoke_agent and chat spans.
type Caller struct {
	// AgentName and AgentID name the agent (gen_ai.agent.name, .id).
	AgentName string
	AgentID   int
	// Backend is the backend's name: "sim", "openai", "replay:openai"…
	// (see core.Usage.Backend).
	Backend string
	// BaseURL is the endpoint's base URL (server.address, server.port);
	// "" for none.
	BaseURL string
}

// WrapLLM returns l with its calls traced: each call is an invoke_agent
// span with a chat span under it, children of ctx's span, and records the
// gen_ai.client.token.usage and gen_ai.client.operation.duration
// histograms. Telemetry that is off returns l itself.
func (t *Telemetry) WrapLLM(l core.LLM, c Caller) core.LLM {
	if !t.Enabled() || l == nil {
		return l
	}
	w := &tracedLLM{t: t, inner: l, provider: ProviderName(c.Backend)}
	w.agentName = genai.SpanInvokeAgent + c.AgentName
	w.agentAttrs = []attribute.KeyValue{genai.OperationInvokeAgent, genai.AgentName.String(c.AgentName), genai.AgentID.String(strconv.Itoa(c.AgentID))}
	if host, port, ok := hostPort(c.BaseURL); ok {
		w.server = []attribute.KeyValue{genai.ServerAddress.String(host), genai.ServerPort.Int(port)}
	}
	w.decisions.Store(&map[string][]attribute.KeyValue{})
	return w
}

// ProviderName returns the gen_ai.provider.name of a backend name (a
// core.Usage.Backend or a backend's Name): "sim"; "replay" for replayed
// completions ("replay:openai"); the inner backend of a recording one
// ("record:openai", "auto:openai" → "openai": a call's own Usage says
// whether it was replayed); else the name itself ("openai").
func ProviderName(backend string) string {
	mode, inner, ok := strings.Cut(backend, ":")
	switch {
	case backend == ProviderReplay || (ok && mode == ProviderReplay):
		return ProviderReplay
	case ok && (mode == "record" || mode == "auto"):
		return inner
	}
	return backend
}

// hostPort splits a base URL into server.address and server.port.
func hostPort(base string) (string, int, bool) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", 0, false
	}
	host, p := u.Hostname(), u.Port()
	if p == "" {
		p = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		_, p, _ = net.SplitHostPort(u.Host)
		port, _ = strconv.Atoi(p)
	}
	return host, port, true
}

// tracedLLM is an LLM whose calls are traced. What does not change from
// call to call (span names, the invoke_agent span's attributes by
// decision, the chat span's by model, the metric points' attribute sets)
// is built once and reused, and the attributes that do change are
// gathered in a pooled buffer: a call makes only the allocations of the
// SDK's two spans.
type tracedLLM struct {
	t          *Telemetry
	inner      core.LLM
	provider   string
	agentName  string
	agentAttrs []attribute.KeyValue
	server     []attribute.KeyValue
	// decisions holds the invoke_agent attributes by decision, replaced
	// (copied, never changed) when a decision is new.
	decisions atomic.Pointer[map[string][]attribute.KeyValue]
	// model holds what is built for the last model of the wrapper's
	// provider, replayed the last model of a replayed completion (a
	// recording backend in auto mode mixes the two).
	model, replayed atomic.Pointer[modelSets]
}

// modelSets is what the spans and metric points of one model and provider
// share.
type modelSets struct {
	model, provider string
	// chatName is the chat span's name, chatAttrs its attributes that
	// depend on the model alone.
	chatName  string
	chatAttrs []attribute.KeyValue
	// input, output and duration are the options of a successful call's
	// metric points.
	input, output, duration []metric.RecordOption
}

// modelSets returns the sets of model and provider, made once and kept
// while they stay the same (an agent's model seldom changes): building an
// attribute set sorts and allocates.
func (l *tracedLLM) modelSets(model, provider string) *modelSets {
	slot := &l.model
	if provider != l.provider {
		slot = &l.replayed
	}
	if ms := slot.Load(); ms != nil && ms.model == model && ms.provider == provider {
		return ms
	}
	base := append([]attribute.KeyValue{genai.OperationChat, genai.ProviderName.String(provider), genai.RequestModel.String(model)}, l.server...)
	with := func(extra ...attribute.KeyValue) []metric.RecordOption {
		set := attribute.NewSet(append(slices.Clone(base), extra...)...)
		return []metric.RecordOption{metric.WithAttributeSet(set)}
	}
	ms := &modelSets{model: model, provider: provider, chatName: genai.SpanChat + model, chatAttrs: base,
		input: with(genai.TokenTypeInput), output: with(genai.TokenTypeOutput), duration: with()}
	slot.Store(ms)
	return ms
}

// decisionAttrs returns the invoke_agent attributes of decision.
func (l *tracedLLM) decisionAttrs(decision string) []attribute.KeyValue {
	m := l.decisions.Load()
	if a, ok := (*m)[decision]; ok {
		return a
	}
	a := append(slices.Clone(l.agentAttrs), genai.Decision.String(decision))
	next := maps.Clone(*m)
	next[decision] = a
	l.decisions.Store(&next) // a lost race only rebuilds an entry
	return a
}

// attrBuf is a pooled buffer of a call's attributes; the SDK copies what
// it is given, so a buffer is reused as soon as the call returns.
type attrBuf struct{ kv []attribute.KeyValue }

var attrBufs = sync.Pool{New: func() any { return &attrBuf{kv: make([]attribute.KeyValue, 0, 24)} }}

// trafficError is a failed call's error that says what it cost on the
// wire (core/llm's *CallError).
type trafficError interface{ CallTraffic() core.Traffic }

// chatKind is the chat span's start option.
var chatKind = []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)}

// Chat calls the inner LLM inside an invoke_agent span and a chat span.
func (l *tracedLLM) Chat(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	tr := l.t.tracer
	ctx, agent := tr.Start(ctx, l.agentName)
	defer agent.End()
	agent.SetAttributes(l.decisionAttrs(req.Decision)...)
	ms := l.modelSets(req.Model, l.provider)
	buf := attrBufs.Get().(*attrBuf)
	defer attrBufs.Put(buf)
	attrs := append(buf.kv[:0], ms.chatAttrs...)
	attrs = append(attrs, genai.RequestTemperature.Float64(req.Temperature))
	if req.MaxTokens > 0 {
		attrs = append(attrs, genai.RequestMaxTokens.Int(req.MaxTokens))
	}
	if req.Seed != 0 && req.Seed <= math.MaxInt64 {
		attrs = append(attrs, genai.RequestSeed.Int64(int64(req.Seed)))
	}
	if l.t.cfg.CaptureContent {
		attrs = append(attrs, genai.InputMessages.String(messagesJSON(req.Messages)))
	}
	ctx, span := tr.Start(ctx, ms.chatName, chatKind...)
	span.SetAttributes(attrs...)
	start := time.Now()
	resp, err := l.inner.Chat(ctx, req)
	seconds := time.Since(start).Seconds()

	// What the call came to, set at once: each SetAttributes may grow the
	// span's attributes.
	attrs = attrs[:0]
	provider := l.provider
	if resp.Usage.Backend != "" {
		if provider = ProviderName(resp.Usage.Backend); provider != l.provider {
			attrs = append(attrs, genai.ProviderName.String(provider))
			ms = l.modelSets(req.Model, provider)
		}
	}
	traffic := resp.Traffic
	if err != nil {
		var te trafficError
		if errors.As(err, &te) {
			traffic = te.CallTraffic()
		}
		et := semconv.ErrorType(err)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		attrs = append(attrs, et)
		agent.SetStatus(codes.Error, err.Error())
		kv := append(slices.Clone(ms.chatAttrs), et)
		l.t.duration.RecordSet(ctx, seconds, attribute.NewSet(kv...))
	} else {
		if virtual(provider) {
			// The simulated LLM answers at once and a replay reads a
			// file: their time is the latency they charge the env.
			seconds = resp.Usage.Latency.Seconds()
		}
		attrs = append(attrs, genai.UsageInputTokens.Int(resp.Usage.PromptTokens), genai.UsageOutputTokens.Int(resp.Usage.CompletionTokens),
			genai.Latency.Float64(resp.Usage.Latency.Seconds()))
		if l.t.cfg.CaptureContent {
			attrs = append(attrs, genai.OutputMessages.String(messagesJSON([]core.Message{{Role: "assistant", Content: resp.Text}})))
		}
		l.t.tokenUsage.Int64Histogram.Record(ctx, int64(resp.Usage.PromptTokens), ms.input...)
		l.t.tokenUsage.Int64Histogram.Record(ctx, int64(resp.Usage.CompletionTokens), ms.output...)
		l.t.duration.Float64Histogram.Record(ctx, seconds, ms.duration...)
	}
	if traffic.Requests > 0 {
		// The counts that are 0, as they are on most calls, are left
		// out: each attribute costs its encoding in every export.
		attrs = append(attrs, genai.Requests.Int(traffic.Requests))
		for _, c := range [...]struct {
			k attribute.Key
			n int
		}{{genai.Retries, traffic.Retries}, {genai.RateLimited, traffic.RateLimited}, {genai.ServerErrors, traffic.ServerErrors}, {genai.Timeouts, traffic.Timeouts}} {
			if c.n > 0 {
				attrs = append(attrs, c.k.Int(c.n))
			}
		}
		if traffic.WaitSeconds > 0 {
			attrs = append(attrs, genai.Wait.Float64(traffic.WaitSeconds))
		}
	}
	span.SetAttributes(attrs...)
	span.End()
	buf.kv = attrs[:0]
	return resp, err
}

// virtual reports whether provider's calls take virtual time (the
// simulated LLM, replayed completions).
func virtual(provider string) bool { return provider == ProviderSim || provider == ProviderReplay }

// messagesJSON writes messages in the form of gen_ai.input.messages:
// [{"role": …, "parts": [{"type": "text", "content": …}]}].
func messagesJSON(msgs []core.Message) string {
	type part struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}
	type message struct {
		Role  string `json:"role"`
		Parts []part `json:"parts"`
	}
	out := make([]message, len(msgs))
	for i, m := range msgs {
		out[i] = message{Role: m.Role, Parts: []part{{Type: "text", Content: m.Content}}}
	}
	b, _ := json.Marshal(out)
	return string(b)
}
