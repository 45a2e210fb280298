package bus

import (
	"context"
	"crypto/rand"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Pipeline tracing: every stage that handles a change records one span,
// whose trace and span IDs are the ones in the traceparent of the messages
// it published, and whose parent is the span of the input it read. So the
// exported trace and `switchyard trace` name the same spans. Off unless
// EnableTracing is called (--otlp-endpoint): then recording costs one
// atomic load.

var tracerProvider atomic.Pointer[trace.TracerProvider]

// EnableTracing sends every stage span to tp from now on; nil turns
// tracing off again. tp must make span IDs with StageIDs, or the exported
// IDs will not be the ones on the bus.
func EnableTracing(tp trace.TracerProvider) {
	if tp == nil {
		tracerProvider.Store(nil)
		return
	}
	tracerProvider.Store(&tp)
}

// TracingEnabled says whether stage spans are exported.
func TracingEnabled() bool { return tracerProvider.Load() != nil }

// RecordStageSpan records that stage handled the change of in (its input's
// meta; zero for the watcher, which starts the trace) from start until now,
// and published out. err marks the span failed.
func RecordStageSpan(ctx context.Context, stage string, in Meta, out TraceContext, start time.Time, err error, attrs ...attribute.KeyValue) {
	tp := tracerProvider.Load()
	if tp == nil {
		return
	}
	if parent, ok := in.Trace.spanContext(); ok {
		ctx = trace.ContextWithRemoteSpanContext(ctx, parent)
	}
	ctx = context.WithValue(ctx, stageIDsKey{}, out)
	attrs = append(attrs, attribute.String("switchyard.stage", stage),
		attribute.Int64("switchyard.generation", int64(in.Generation)))
	_, span := (*tp).Tracer("switchyard.dev/switchyard/bus").Start(ctx, stage,
		trace.WithTimestamp(start), trace.WithSpanKind(trace.SpanKindInternal), trace.WithAttributes(attrs...))
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// spanContext is t as a remote, sampled OTel span context; ok is false for
// a zero or malformed t.
func (t TraceContext) spanContext() (trace.SpanContext, bool) {
	traceID, err := trace.TraceIDFromHex(t.TraceID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	spanID, err := trace.SpanIDFromHex(t.SpanID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled, Remote: true})
	return sc, sc.IsValid()
}

type stageIDsKey struct{}

// StageIDs is the OTel SDK's IDGenerator (sdktrace.WithIDGenerator) for
// stage spans: a span gets the IDs its stage put on the bus, which
// RecordStageSpan passes in the context. Spans started otherwise get
// random IDs.
type StageIDs struct{}

// NewIDs returns the trace and span ID of a root span.
func (StageIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if t, ok := ctx.Value(stageIDsKey{}).(TraceContext); ok {
		if sc, ok := t.spanContext(); ok {
			return sc.TraceID(), sc.SpanID()
		}
	}
	var traceID trace.TraceID
	_, _ = rand.Read(traceID[:])
	return traceID, randomSpanID()
}

// NewSpanID returns the span ID of a span whose parent is known.
func (StageIDs) NewSpanID(ctx context.Context, traceID trace.TraceID) trace.SpanID {
	if t, ok := ctx.Value(stageIDsKey{}).(TraceContext); ok {
		if sc, ok := t.spanContext(); ok && sc.TraceID() == traceID {
			return sc.SpanID()
		}
	}
	return randomSpanID()
}

func randomSpanID() trace.SpanID {
	var id trace.SpanID
	_, _ = rand.Read(id[:])
	return id
}
