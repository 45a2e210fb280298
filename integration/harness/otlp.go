package harness

import (
	"context"
	"encoding/hex"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
)

// OTLPSpan is a span an OTLPReceiver received, IDs in hex.
type OTLPSpan struct {
	Service, Name           string
	TraceID, SpanID, Parent string
	Attributes              map[string]string
}

// OTLPReceiver is an OpenTelemetry collector's trace service (OTLP/gRPC)
// on loopback that keeps every span it receives.
type OTLPReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	Addr string

	mu    sync.Mutex
	spans []OTLPSpan
}

// StartOTLP starts a receiver, stopped when the test ends.
func StartOTLP(t testing.TB) *OTLPReceiver {
	t.Helper()
	r := &OTLPReceiver{}
	r.Addr = serveTraces(t, r)
	return r
}

// serveTraces serves an OTLP trace service on a loopback port until the
// test ends, and returns its address.
func serveTraces(t testing.TB, svc collectortrace.TraceServiceServer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(srv, svc)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// Export keeps the spans of one request.
func (r *OTLPReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.GetKey() == "service.name" {
				service = kv.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, otlpSpan(service, s))
			}
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func otlpSpan(service string, s *tracepb.Span) OTLPSpan {
	out := OTLPSpan{Service: service, Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()),
		SpanID: hex.EncodeToString(s.GetSpanId()), Parent: hex.EncodeToString(s.GetParentSpanId()),
		Attributes: map[string]string{}}
	for _, kv := range s.GetAttributes() {
		v := kv.GetValue()
		switch {
		case v.GetStringValue() != "":
			out.Attributes[kv.GetKey()] = v.GetStringValue()
		default:
			out.Attributes[kv.GetKey()] = v.String()
		}
	}
	return out
}

// Spans returns the spans received so far.
func (r *OTLPReceiver) Spans() []OTLPSpan {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]OTLPSpan(nil), r.spans...)
}

// SpanCounter is an OTLP trace service on loopback that only counts what
// it receives: benchmarks send far too many spans to keep.
type SpanCounter struct {
	collectortrace.UnimplementedTraceServiceServer
	Addr  string
	spans atomic.Int64
}

// StartSpanCounter starts a counter, stopped when the test ends.
func StartSpanCounter(t testing.TB) *SpanCounter {
	t.Helper()
	c := &SpanCounter{}
	c.Addr = serveTraces(t, c)
	return c
}

// Export counts the spans of one request.
func (c *SpanCounter) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			c.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// Spans is how many spans it received.
func (c *SpanCounter) Spans() int64 { return c.spans.Load() }
