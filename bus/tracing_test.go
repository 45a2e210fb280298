package bus

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// TestStageSpansCarryBusIDs: each stage's span has the trace and span ID
// of the traceparent it published, and its input's span as parent.
func TestStageSpansCarryBusIDs(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithIDGenerator(StageIDs{}))
	EnableTracing(tp)
	defer EnableTracing(nil)

	ctx := context.Background()
	start := time.Unix(1000, 0)
	root := NewTrace()
	RecordStageSpan(ctx, StageWatcher, Meta{Generation: 7}, root, start, nil)
	translated := root.Child()
	RecordStageSpan(ctx, StageTranslator, Meta{Generation: 7, Trace: root}, translated, start, nil)
	RecordStageSpan(ctx, StageAnnotations, Meta{Generation: 7, Trace: translated}, translated.Child(), start, errors.New("plugin down"))

	spans := exp.GetSpans()
	if len(spans) != 3 {
		t.Fatalf("got %d spans, want 3", len(spans))
	}
	tests := []struct {
		name, spanID, parentID string
		failed                 bool
	}{
		{StageWatcher, root.SpanID, "", false},
		{StageTranslator, translated.SpanID, root.SpanID, false},
		{StageAnnotations, "", translated.SpanID, true},
	}
	for i, tt := range tests {
		s := spans[i]
		if s.Name != tt.name {
			t.Errorf("span %d: name %q, want %q", i, s.Name, tt.name)
		}
		if got := s.SpanContext.TraceID().String(); got != root.TraceID {
			t.Errorf("%s: trace %s, want %s", tt.name, got, root.TraceID)
		}
		if tt.spanID != "" && s.SpanContext.SpanID().String() != tt.spanID {
			t.Errorf("%s: span %s, want %s", tt.name, s.SpanContext.SpanID(), tt.spanID)
		}
		parent := ""
		if s.Parent.IsValid() {
			parent = s.Parent.SpanID().String()
		}
		if parent != tt.parentID {
			t.Errorf("%s: parent %q, want %q", tt.name, parent, tt.parentID)
		}
		if failed := s.Status.Code == codes.Error; failed != tt.failed {
			t.Errorf("%s: failed %v, want %v", tt.name, failed, tt.failed)
		}
		if !s.StartTime.Equal(start) {
			t.Errorf("%s: start %v, want %v", tt.name, s.StartTime, start)
		}
	}
}

// TestStageSpansOffByDefault: without EnableTracing nothing is recorded
// and no provider is consulted.
func TestStageSpansOffByDefault(t *testing.T) {
	if TracingEnabled() {
		t.Fatal("tracing on without EnableTracing")
	}
	allocs := testing.AllocsPerRun(100, func() {
		RecordStageSpan(context.Background(), StageRenderer, Meta{}, TraceContext{}, time.Time{}, nil)
	})
	if allocs != 0 {
		t.Errorf("RecordStageSpan allocates %v times with tracing off", allocs)
	}
}
