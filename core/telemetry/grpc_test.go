package telemetry_test

import (
	"context"
	"net"
	"sync/atomic"
	"testing"

	collmetric "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	colltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"

	"github.com/troupe-dev/troupe/core"
	"github.com/troupe-dev/troupe/core/telemetry"
)

// grpcCollector is an OTLP/gRPC collector stand-in that counts the spans
// and metrics it receives.
type grpcCollector struct {
	colltrace.UnimplementedTraceServiceServer
	spans, metrics atomic.Int64
}

func (c *grpcCollector) Export(_ context.Context, r *colltrace.ExportTraceServiceRequest) (*colltrace.ExportTraceServiceResponse, error) {
	for _, rs := range r.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			c.spans.Add(int64(len(ss.Spans)))
		}
	}
	return &colltrace.ExportTraceServiceResponse{}, nil
}

// metricsService is the collector's metrics service.
type metricsService struct {
	collmetric.UnimplementedMetricsServiceServer
	c *grpcCollector
}

func (m *metricsService) Export(_ context.Context, r *collmetric.ExportMetricsServiceRequest) (*collmetric.ExportMetricsServiceResponse, error) {
	for _, rm := range r.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			m.c.metrics.Add(int64(len(sm.Metrics)))
		}
	}
	return &collmetric.ExportMetricsServiceResponse{}, nil
}

// TestStartOTLPGRPC checks that protocol = "grpc" sends the spans and
// metrics over OTLP/gRPC.
func TestStartOTLPGRPC(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &grpcCollector{}
	srv := grpc.NewServer()
	colltrace.RegisterTraceServiceServer(srv, c)
	collmetric.RegisterMetricsServiceServer(srv, &metricsService{c: c})
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	tel, err := telemetry.Start(context.Background(), telemetry.Config{Exporter: telemetry.ExporterOTLP, Protocol: telemetry.ProtocolGRPC, Endpoint: "http://" + lis.Addr().String()})
	if err != nil {
		t.Fatal(err)
	}
	l := tel.WrapLLM(fakeLLM{}, telemetry.Caller{AgentName: "a", Backend: "fake"})
	if _, err := l.Chat(context.Background(), core.ChatRequest{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c.spans.Load() != 2 || c.metrics.Load() == 0 {
		t.Errorf("the collector got %d spans (want 2: invoke_agent, chat) and %d metrics", c.spans.Load(), c.metrics.Load())
	}
}
