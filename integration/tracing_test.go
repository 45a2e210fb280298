package integration

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// startTraced runs switchyard with the echo-a Service and the bus exposed
// on the returned address.
func startTraced(t *testing.T, extra ...string) (*harness.Switchyard, string) {
	t.Helper()
	dir := t.TempDir()
	port := harness.StartEcho(t, harness.Binary(t), "echo-a", "a-1")
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", port))
	natsAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	return harness.StartSwitchyard(t, dir, append([]string{"--nats-listen", natsAddr}, extra...)...), natsAddr
}

// addTracedIngress adds the Ingress default/traced and waits until it is
// served: one change through every stage.
func addTracedIngress(t *testing.T, sy *harness.Switchyard) {
	t.Helper()
	harness.WriteFile(t, filepath.Join(sy.Manifests, "ing.yaml"), harness.IngressYAML("default", "traced", "traced.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	waitStatus(t, sy, "traced.example.com", 200)
}

// busSpans records, per trace, the span ID each stage put on the bus.
type busSpans struct {
	mu      sync.Mutex
	byTrace map[string]map[string]map[string]bool // trace → stage → span IDs
	ingress map[string]string                     // object key → trace of its last message
}

func (b *busSpans) add(m *nats.Msg) {
	meta := bus.MetaFromHeader(m.Header)
	b.mu.Lock()
	defer b.mu.Unlock()
	stages := b.byTrace[meta.Trace.TraceID]
	if stages == nil {
		stages = map[string]map[string]bool{}
		b.byTrace[meta.Trace.TraceID] = stages
	}
	if stages[meta.Stage] == nil {
		stages[meta.Stage] = map[string]bool{}
	}
	stages[meta.Stage][meta.Trace.SpanID] = true
	b.ingress[m.Subject] = meta.Trace.TraceID
}

func (b *busSpans) traceOf(subject string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ingress[subject]
}

func (b *busSpans) onBus(traceID, stage, spanID string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.byTrace[traceID][stage][spanID]
}

// TestPipelineTraceExported: with --otlp-endpoint, the change that adds an
// Ingress reaches an OTLP receiver as one trace with a span per stage,
// each span's ID the one the stage put on the bus (what `switchyard trace`
// shows), each stage's parent the stage before it.
func TestPipelineTraceExported(t *testing.T) {
	receiver := harness.StartOTLP(t)
	sy, natsAddr := startTraced(t, "--otlp-endpoint", receiver.Addr, "--otel-service-name", "sy-test")

	nc, err := nats.Connect("nats://" + natsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	seen := &busSpans{byTrace: map[string]map[string]map[string]bool{}, ingress: map[string]string{}}
	sub, err := nc.Subscribe(bus.Root+".>", seen.add)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}

	addTracedIngress(t, sy)
	subject := bus.StageSubject(bus.StageWatcher) + ".object.ingress.default.traced"
	traceID := seen.traceOf(subject)
	if traceID == "" {
		t.Fatalf("no message on %s", subject)
	}

	wantOrder := []string{bus.StageWatcher, bus.StageTranslator, bus.StageAnnotations, bus.StageRenderer, bus.StageApplier}
	var got map[string]harness.OTLPSpan
	harness.WaitFor(t, 30*time.Second, "a span per stage of trace "+traceID, func() error {
		got = map[string]harness.OTLPSpan{}
		for _, s := range receiver.Spans() {
			if s.TraceID == traceID {
				got[s.Name] = s
			}
		}
		for _, stage := range wantOrder {
			if _, ok := got[stage]; !ok {
				return fmt.Errorf("no %s span yet; have %v", stage, got)
			}
		}
		return nil
	})
	for i, stage := range wantOrder {
		s := got[stage]
		if s.Service != "sy-test" {
			t.Errorf("%s: service.name %q, want sy-test", stage, s.Service)
		}
		if !seen.onBus(traceID, stage, s.SpanID) {
			t.Errorf("%s: span %s is not the traceparent of any of its bus messages", stage, s.SpanID)
		}
		wantParent := ""
		if i > 0 {
			wantParent = got[wantOrder[i-1]].SpanID
		}
		if s.Parent != wantParent {
			t.Errorf("%s: parent %q, want %q (the %s span)", stage, s.Parent, wantParent, wantOrder[max(i-1, 0)])
		}
	}
}
