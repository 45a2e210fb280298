package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"switchyard.dev/switchyard/bus"
)

// TestTraceLineShowsSpan: each line names the trace and span of the
// message's traceparent, the IDs an exported stage span has.
func TestTraceLineShowsSpan(t *testing.T) {
	ingest := time.Unix(100, 0)
	tc := bus.TraceContext{TraceID: strings.Repeat("ab", 16), SpanID: strings.Repeat("cd", 8)}
	tests := []struct {
		name string
		meta bus.Meta
		op   string
		want []string
	}{
		{"traced", bus.Meta{Generation: 3, Stage: bus.StageTranslator, Trace: tc, Ingest: ingest},
			"", []string{" translator ", " 3 ", tc.TraceID + "/" + tc.SpanID, " 5ms ", "server.a"}},
		{"deleted", bus.Meta{Generation: 4, Stage: bus.StageTranslator, Trace: tc, Ingest: ingest},
			bus.OpDelete, []string{"server.a (deleted)"}},
		{"no traceparent", bus.Meta{Stage: bus.StageTranslator}, "", []string{" - "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := tt.meta.Header()
			if tt.meta.Trace.TraceID == "" {
				h.Del(bus.HeaderTraceparent)
			}
			if tt.op != "" {
				h.Set(bus.HeaderOp, tt.op)
			}
			m := &nats.Msg{Subject: bus.StageSubject(bus.StageTranslator) + ".server.a", Header: h}
			line := traceLine(m, ingest.Add(5*time.Millisecond))
			for _, want := range tt.want {
				if !strings.Contains(line, want) {
					t.Errorf("line %q lacks %q", line, want)
				}
			}
		})
	}
}
