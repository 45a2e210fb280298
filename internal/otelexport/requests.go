package otelexport

// Request spans: NGINX records them in Lua (lua/switchyard/tracing.lua)
// into a bounded shared dict, since Debian has no OpenTelemetry module;
// the process that runs NGINX (the applier's) drains them through the
// configuration endpoint (POST /traces) every otel-schedule-delay-millis
// and exports them with the OTLP exporter, to the collector and under the
// service name nginx.conf gives (otlp-collector-host/port or
// --otlp-endpoint, otel-service-name).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// ErrExport wraps the errors of exports to the collector (the others are
// NGINX's: not running, or tracing off).
var ErrExport = errors.New("export request spans")

// offInterval is how often NGINX is asked again while request tracing is
// off or NGINX does not answer: one small request over the unix socket.
const offInterval = time.Second

// maxDrainBytes bounds one answer of NGINX: a batch of at most
// otel-max-export-batch-size spans of a few KiB each.
const maxDrainBytes = 64 << 20

// drained is NGINX's answer to POST /traces.
type drained struct {
	Endpoint string    `json:"endpoint"`
	Service  string    `json:"service"`
	DelayMS  int       `json:"delay_ms"`
	Batch    int       `json:"batch"`
	Dropped  float64   `json:"dropped"`
	Queued   int       `json:"queued"`
	Spans    []luaSpan `json:"spans"`
}

// luaSpan is one span as tracing.lua writes it.
type luaSpan struct {
	TraceID string   `json:"t"`
	SpanID  string   `json:"s"`
	Parent  string   `json:"p"`
	Name    string   `json:"n"`
	Start   float64  `json:"b"` // seconds since the epoch
	End     float64  `json:"e"`
	Error   bool     `json:"err"`
	Attrs   luaAttrs `json:"a"`
}

// luaAttrs are the attributes tracing.lua writes (the status code and
// flavor, its STRING_ATTRS and NUMBER_ATTRS); one it did not write stays
// nil. Decoded into fields, not a map of interfaces: that was most of the
// controller's CPU per span (TestLuaAttributesAreKnown keeps the two
// lists together).
type luaAttrs struct {
	StatusCode          *float64 `json:"http.status_code"`
	Flavor              *string  `json:"http.flavor"`
	Method              *string  `json:"http.method"`
	Target              *string  `json:"http.target"`
	Scheme              *string  `json:"http.scheme"`
	Host                *string  `json:"http.host"`
	UserAgent           *string  `json:"http.user_agent"`
	PeerIP              *string  `json:"net.peer.ip"`
	Namespace           *string  `json:"ingress.namespace"`
	Ingress             *string  `json:"ingress.name"`
	Service             *string  `json:"ingress.service_name"`
	ServicePort         *string  `json:"ingress.service_port"`
	Path                *string  `json:"ingress.path"`
	Upstream            *string  `json:"ingress.upstream"`
	UpstreamAddress     *string  `json:"upstream.address"`
	UpstreamStatus      *float64 `json:"upstream.status"`
	UpstreamConnectTime *float64 `json:"upstream.connect_time"`
	UpstreamHeaderTime  *float64 `json:"upstream.header_time"`
	UpstreamTime        *float64 `json:"upstream.response_time"`
}

// RequestSpans drains and exports request spans until Run's context ends.
type RequestSpans struct {
	post    func(ctx context.Context, max int) (int, []byte, error)
	onError func(error)

	mu       sync.Mutex
	exporter *otlptrace.Exporter
	endpoint string
	service  string

	dropped      atomic.Uint64 // float64 bits: NGINX's drop count
	exported     atomic.Uint64
	exportErrors atomic.Uint64
}

// NewRequestSpans drains the configuration endpoint at socket; onError
// hears what went wrong (NGINX not answering, an export that failed).
func NewRequestSpans(socket string, onError func(error)) *RequestSpans {
	return &RequestSpans{post: unixPoster(socket), onError: onError}
}

// Dropped is how many spans NGINX dropped since it started: the queue was
// full (otel-max-queuesize) or the dict had no memory left.
func (r *RequestSpans) Dropped() float64 { return math.Float64frombits(r.dropped.Load()) }

// Exported is how many spans were sent to the collector.
func (r *RequestSpans) Exported() uint64 { return r.exported.Load() }

// ExportErrors is how many exports failed (their spans are lost).
func (r *RequestSpans) ExportErrors() uint64 { return r.exportErrors.Load() }

// Run drains every otel-schedule-delay-millis, at once again while full
// batches come, until ctx ends; then it sends what it holds.
func (r *RequestSpans) Run(ctx context.Context) {
	defer r.shutdown()
	batch := 512
	for {
		d, err := r.drain(ctx, batch)
		wait := offInterval
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return
			}
			r.onError(err)
		case d != nil:
			batch = max(d.Batch, 1)
			wait = time.Duration(max(d.DelayMS, 1)) * time.Millisecond
			if len(d.Spans) >= batch {
				wait = 0
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// drain takes one batch from NGINX and exports it; nil, nil when request
// tracing is off.
func (r *RequestSpans) drain(ctx context.Context, batch int) (*drained, error) {
	status, body, err := r.post(ctx, batch)
	if err != nil {
		return nil, err
	}
	if status == http.StatusNotFound {
		r.shutdown()
		return nil, nil
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("drain request spans: NGINX answered %d: %.200s", status, body)
	}
	d := &drained{}
	if err := json.Unmarshal(body, d); err != nil {
		return nil, fmt.Errorf("drain request spans: %w in %.200s", err, body)
	}
	r.dropped.Store(math.Float64bits(d.Dropped))
	if len(d.Spans) == 0 {
		return d, nil
	}
	exp, err := r.exporterFor(ctx, d.Endpoint, d.Service)
	if err != nil {
		r.exportErrors.Add(1)
		return d, fmt.Errorf("%w: %w", ErrExport, err)
	}
	spans := snapshots(d.Spans, d.Service)
	if err := exp.ExportSpans(ctx, spans); err != nil {
		r.exportErrors.Add(1)
		return d, fmt.Errorf("%w: %d spans to %s: %w", ErrExport, len(spans), d.Endpoint, err)
	}
	r.exported.Add(uint64(len(spans)))
	return d, nil
}

// exporterFor is the exporter of endpoint, made anew when nginx.conf
// names another collector.
func (r *RequestSpans) exporterFor(ctx context.Context, endpoint, service string) (*otlptrace.Exporter, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exporter != nil && r.endpoint == endpoint {
		r.service = service
		return r.exporter, nil
	}
	if err := CheckEndpoint(endpoint); err != nil {
		return nil, err
	}
	if r.exporter != nil {
		_ = r.exporter.Shutdown(ctx)
	}
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter for %s: %w", endpoint, err)
	}
	r.exporter, r.endpoint, r.service = exp, endpoint, service
	return exp, nil
}

func (r *RequestSpans) shutdown() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.exporter == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.exporter.Shutdown(ctx)
	r.exporter = nil
}

// scope names the instrumentation of request spans.
var scope = instrumentation.Scope{Name: "switchyard.dev/switchyard/lua"}

// snapshots turns tracing.lua's spans into the SDK's read-only spans,
// keeping their IDs and times; a span with unreadable IDs is skipped.
func snapshots(in []luaSpan, service string) []sdktrace.ReadOnlySpan {
	res := resource.NewSchemaless(attribute.String("service.name", service))
	out := make([]sdktrace.ReadOnlySpan, 0, len(in))
	for _, s := range in {
		stub, ok := s.stub(res)
		if ok {
			out = append(out, stub.Snapshot())
		}
	}
	return out
}

func (s luaSpan) stub(res *resource.Resource) (tracetest.SpanStub, bool) {
	traceID, err := trace.TraceIDFromHex(s.TraceID)
	if err != nil {
		return tracetest.SpanStub{}, false
	}
	spanID, err := trace.SpanIDFromHex(s.SpanID)
	if err != nil {
		return tracetest.SpanStub{}, false
	}
	stub := tracetest.SpanStub{
		Name: s.Name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled,
		}),
		SpanKind:             trace.SpanKindServer,
		StartTime:            epoch(s.Start),
		EndTime:              epoch(s.End),
		Attributes:           attributes(s.Attrs),
		Resource:             res,
		InstrumentationScope: scope,
	}
	if parent, err := trace.SpanIDFromHex(s.Parent); err == nil {
		stub.Parent = trace.NewSpanContext(trace.SpanContextConfig{
			TraceID: traceID, SpanID: parent, TraceFlags: trace.FlagsSampled, Remote: true,
		})
	}
	if s.Error {
		stub.Status = sdktrace.Status{Code: codes.Error}
	}
	return stub, true
}

// epoch is NGINX's time (seconds, millisecond precision) as a time.
func epoch(sec float64) time.Time {
	whole, frac := math.Modf(sec)
	return time.Unix(int64(whole), int64(math.Round(frac*1000))*int64(time.Millisecond))
}

// attributes are the attributes tracing.lua wrote, whole numbers as
// integers (a status code), in key order.
func attributes(a luaAttrs) []attribute.KeyValue {
	out := make([]attribute.KeyValue, 0, 19)
	for _, s := range []struct {
		key string
		v   *string
	}{
		{"http.flavor", a.Flavor}, {"http.method", a.Method}, {"http.target", a.Target}, {"http.scheme", a.Scheme},
		{"http.host", a.Host}, {"http.user_agent", a.UserAgent}, {"net.peer.ip", a.PeerIP}, {"ingress.namespace", a.Namespace},
		{"ingress.name", a.Ingress}, {"ingress.service_name", a.Service}, {"ingress.service_port", a.ServicePort},
		{"ingress.path", a.Path}, {"ingress.upstream", a.Upstream}, {"upstream.address", a.UpstreamAddress},
	} {
		if s.v != nil {
			out = append(out, attribute.String(s.key, *s.v))
		}
	}
	for _, n := range []struct {
		key string
		v   *float64
	}{
		{"http.status_code", a.StatusCode}, {"upstream.status", a.UpstreamStatus}, {"upstream.connect_time", a.UpstreamConnectTime},
		{"upstream.header_time", a.UpstreamHeaderTime}, {"upstream.response_time", a.UpstreamTime},
	} {
		if n.v != nil {
			out = append(out, numberAttribute(n.key, *n.v))
		}
	}
	slices.SortFunc(out, func(a, b attribute.KeyValue) int { return strings.Compare(string(a.Key), string(b.Key)) })
	return out
}

// numberAttribute is a whole number as an integer, any other as a float.
func numberAttribute(key string, v float64) attribute.KeyValue {
	if v == math.Trunc(v) && math.Abs(v) < 1<<53 {
		return attribute.Int64(key, int64(v))
	}
	return attribute.Float64(key, v)
}

// unixPoster POSTs /traces?max=N to the configuration endpoint's socket.
func unixPoster(socket string) func(context.Context, int) (int, []byte, error) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives: true,
	}}
	return func(ctx context.Context, max int) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://switchyard/traces?max="+strconv.Itoa(max), http.NoBody)
		if err != nil {
			return 0, nil, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil, fmt.Errorf("drain request spans: %w", err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		n, err := io.Copy(&buf, io.LimitReader(resp.Body, maxDrainBytes+1))
		if err != nil {
			return 0, nil, fmt.Errorf("drain request spans: %w", err)
		}
		if n > maxDrainBytes {
			return 0, nil, errors.New("drain request spans: answer over 64 MiB")
		}
		return resp.StatusCode, buf.Bytes(), nil
	}
}
