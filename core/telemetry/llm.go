package telemetry

import (
	"context"
	"encoding/json"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/troupe-dev/troupe/core"
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
	w.agentName = "invoke_agent " + c.AgentName
	w.agentAttrs = []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIAgentName(c.AgentName), semconv.GenAIAgentID(strconv.Itoa(c.AgentID))}
	if host, port, ok := hostPort(c.BaseURL); ok {
		w.server = []attribute.KeyValue{semconv.ServerAddress(host), semconv.ServerPort(port)}
	}
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

// tracedLLM is an LLM whose calls are traced.
type tracedLLM struct {
	t          *Telemetry
	inner      core.LLM
	provider   string
	agentName  string
	agentAttrs []attribute.KeyValue
	server     []attribute.KeyValue
	sets       atomic.Pointer[metricSets]
}

// Chat calls the inner LLM inside an invoke_agent span and a chat span.
func (l *tracedLLM) Chat(ctx context.Context, req core.ChatRequest) (core.ChatResponse, error) {
	tr := l.t.tracer
	ctx, agent := tr.Start(ctx, l.agentName, trace.WithAttributes(append(l.agentAttrs[:len(l.agentAttrs):len(l.agentAttrs)],
		attribute.String("troupe.decision", req.Decision))...))
	defer agent.End()
	attrs := make([]attribute.KeyValue, 0, 8+len(l.server))
	attrs = append(attrs, semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(l.provider),
		semconv.GenAIRequestModel(req.Model), semconv.GenAIRequestTemperature(req.Temperature))
	if req.MaxTokens > 0 {
		attrs = append(attrs, semconv.GenAIRequestMaxTokens(req.MaxTokens))
	}
	if req.Seed != 0 && req.Seed <= math.MaxInt64 {
		attrs = append(attrs, semconv.GenAIRequestSeedKey.Int64(int64(req.Seed)))
	}
	attrs = append(attrs, l.server...)
	if l.t.cfg.CaptureContent {
		attrs = append(attrs, semconv.GenAIInputMessagesKey.String(messagesJSON(req.Messages)))
	}
	ctx, span := tr.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	start := time.Now()
	resp, err := l.inner.Chat(ctx, req)
	seconds := time.Since(start).Seconds()

	// What the call came to, set at once: each SetAttributes grows the
	// span's attributes.
	end := make([]attribute.KeyValue, 0, 8)
	provider := l.provider
	if resp.Usage.Backend != "" {
		provider = ProviderName(resp.Usage.Backend)
		if provider != l.provider {
			end = append(end, semconv.GenAIProviderNameKey.String(provider))
		}
	}
	if err != nil {
		et := semconv.ErrorType(err)
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		end = append(end, et)
		agent.SetStatus(codes.Error, err.Error())
		kv := append([]attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider),
			semconv.GenAIRequestModel(req.Model), et}, l.server...)
		l.t.duration.RecordSet(ctx, seconds, attribute.NewSet(kv...))
	} else {
		end = append(end, semconv.GenAIUsageInputTokens(resp.Usage.PromptTokens), semconv.GenAIUsageOutputTokens(resp.Usage.CompletionTokens))
		if l.t.cfg.CaptureContent {
			end = append(end, semconv.GenAIOutputMessagesKey.String(messagesJSON([]core.Message{{Role: "assistant", Content: resp.Text}})))
		}
		ms := l.metricSets(req.Model, provider)
		l.t.tokenUsage.RecordSet(ctx, int64(resp.Usage.PromptTokens), ms.input)
		l.t.tokenUsage.RecordSet(ctx, int64(resp.Usage.CompletionTokens), ms.output)
		l.t.duration.RecordSet(ctx, seconds, ms.duration)
	}
	if tf := resp.Traffic; tf.Requests > 0 {
		end = append(end, attribute.Int("troupe.llm.requests", tf.Requests), attribute.Int("troupe.llm.retries", tf.Retries),
			attribute.Int("troupe.llm.rate_limited", tf.RateLimited), attribute.Float64("troupe.llm.wait_s", tf.WaitSeconds))
	}
	span.SetAttributes(end...)
	span.End()
	return resp, err
}

// metricSets are the attributes of a successful call's metric points.
type metricSets struct {
	model, provider         string
	input, output, duration attribute.Set
}

// metricSets returns the attribute sets of model and provider, made once
// and kept while they stay the same (an agent's model seldom changes):
// building a set sorts and allocates, the most of a point's cost.
func (l *tracedLLM) metricSets(model, provider string) *metricSets {
	if ms := l.sets.Load(); ms != nil && ms.model == model && ms.provider == provider {
		return ms
	}
	base := append([]attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider),
		semconv.GenAIRequestModel(model)}, l.server...)
	with := func(extra attribute.KeyValue) attribute.Set {
		return attribute.NewSet(append(append([]attribute.KeyValue(nil), base...), extra)...)
	}
	ms := &metricSets{model: model, provider: provider, input: with(semconv.GenAITokenTypeInput),
		output: with(semconv.GenAITokenTypeOutput), duration: attribute.NewSet(base...)}
	l.sets.Store(ms)
	return ms
}

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
