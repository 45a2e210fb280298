package bus

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Header names carried by every message on the graph.
const (
	HeaderTraceparent = "traceparent"
	HeaderGeneration  = "Switchyard-Generation"
	HeaderStage       = "Switchyard-Stage"
	// HeaderInstance names the process of the stage that published (the
	// pod, with several replicas of a stage), so an operator sees which
	// applier reported a result and which translator led.
	HeaderInstance = "Switchyard-Instance"
	HeaderSchema   = "Switchyard-Schema"
	// HeaderIngest is when the change entered the watcher (Unix nanoseconds),
	// so `switchyard trace` can show the latency of every later stage.
	HeaderIngest = "Switchyard-Ingest"
	// HeaderResult is an apply result's outcome (ApplyResult.Outcome), so
	// that trace, which sees headers only, shows which applier failed.
	HeaderResult = "Switchyard-Result"
	// HeaderOp marks a deletion: the key's state is gone.
	HeaderOp = "Switchyard-Op"
	OpDelete = "delete"
)

// Meta is what every message says about where it comes from.
type Meta struct {
	Generation uint64
	Stage      string
	// Instance is the producing process (Conn.SetInstance); "" when it
	// has no name.
	Instance string
	Trace    TraceContext
	Ingest   time.Time
}

// TraceContext is a W3C trace context: one trace per change entering the
// watcher, one span per stage that handles it.
type TraceContext struct {
	TraceID string // 32 hex digits
	SpanID  string // 16 hex digits
}

// NewTrace starts a trace for a change entering the pipeline.
func NewTrace() TraceContext {
	return TraceContext{TraceID: randomHex(16), SpanID: randomHex(8)}
}

// Child keeps the trace and opens a new span, for the next stage.
func (t TraceContext) Child() TraceContext {
	if t.TraceID == "" {
		return NewTrace()
	}
	return TraceContext{TraceID: t.TraceID, SpanID: randomHex(8)}
}

// String renders the traceparent header value.
func (t TraceContext) String() string {
	return "00-" + t.TraceID + "-" + t.SpanID + "-01"
}

// ParseTraceparent reads a traceparent header; a malformed one yields the
// zero TraceContext rather than an error, as the W3C spec asks.
func ParseTraceparent(v string) TraceContext {
	parts := strings.Split(v, "-")
	if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return TraceContext{}
	}
	return TraceContext{TraceID: parts[1], SpanID: parts[2]}
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("crypto/rand: %v", err))
	}
	return hex.EncodeToString(b)
}

// Header renders the metadata as NATS headers.
func (m Meta) Header() nats.Header {
	h := nats.Header{}
	h.Set(HeaderTraceparent, m.Trace.String())
	h.Set(HeaderGeneration, strconv.FormatUint(m.Generation, 10))
	h.Set(HeaderStage, m.Stage)
	if m.Instance != "" {
		h.Set(HeaderInstance, m.Instance)
	}
	h.Set(HeaderSchema, SchemaVersion)
	if !m.Ingest.IsZero() {
		h.Set(HeaderIngest, strconv.FormatInt(m.Ingest.UnixNano(), 10))
	}
	return h
}

// MetaFromHeader reads the metadata back; missing fields stay zero.
func MetaFromHeader(h nats.Header) Meta {
	m := Meta{Stage: h.Get(HeaderStage), Instance: h.Get(HeaderInstance), Trace: ParseTraceparent(h.Get(HeaderTraceparent))}
	m.Generation, _ = strconv.ParseUint(h.Get(HeaderGeneration), 10, 64)
	if ns, err := strconv.ParseInt(h.Get(HeaderIngest), 10, 64); err == nil {
		m.Ingest = time.Unix(0, ns)
	}
	return m
}
