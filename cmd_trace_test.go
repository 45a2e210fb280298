package main

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"switchyard.dev/switchyard/bus"
)

// TestTraceLineShowsSpan: each line names the trace and span of the
// message's traceparent, the IDs an exported stage span has, and the
// instance that published it with an apply result's outcome.
func TestTraceLineShowsSpan(t *testing.T) {
	ingest := time.Unix(100, 0)
	tc := bus.TraceContext{TraceID: strings.Repeat("ab", 16), SpanID: strings.Repeat("cd", 8)}
	tests := []struct {
		name string
		meta bus.Meta
		op   string
		// result is the outcome header of an apply result.
		result string
		want   []string
	}{
		{"traced", bus.Meta{Generation: 3, Stage: bus.StageTranslator, Trace: tc, Ingest: ingest},
			"", "", []string{" translator ", " 3 ", tc.TraceID + "/" + tc.SpanID, " 5ms ", "server.a"}},
		{"deleted", bus.Meta{Generation: 4, Stage: bus.StageTranslator, Trace: tc, Ingest: ingest},
			bus.OpDelete, "", []string{"server.a (deleted)"}},
		{"no traceparent", bus.Meta{Stage: bus.StageTranslator}, "", "", []string{" - "}},
		{"instance", bus.Meta{Stage: bus.StageTranslator, Instance: "translator-7d9f-x2"}, "", "", []string{"server.a from translator-7d9f-x2"}},
		{"failed apply", bus.Meta{Stage: bus.StageApplier, Instance: "applier-b"}, "", "failed", []string{"server.a failed from applier-b"}},
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
			if tt.result != "" {
				h.Set(bus.HeaderResult, tt.result)
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
