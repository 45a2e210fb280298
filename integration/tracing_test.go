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
func startTraced(t *testing.T, extra ...string) (sy *harness.Switchyard, natsAddr, keys string) {
	t.Helper()
	dir := t.TempDir()
	port := harness.StartEcho(t, harness.Binary(t), "echo-a", "a-1")
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", port))
	natsAddr = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	keys = harness.BusKeys(t)
	sy = harness.StartSwitchyard(t, dir, append([]string{"--nats-listen", natsAddr, "--nats-keys", keys}, extra...)...)
	return sy, natsAddr, keys
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
	ingress map[string]string                     // trace copy's subject → trace of its last message
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
	sy, natsAddr, keys := startTraced(t, "--otlp-endpoint", receiver.Addr, "--otel-service-name", "sy-test")
	seen := watchBus(t, "nats://"+natsAddr, keys)
	addTracedIngress(t, sy)
	expectPipelineTrace(t, receiver, seen, "sy-test")
}

// TestPipelineTraceAcrossStageProcesses: with one process per stage on an
// external NATS, each exporting its own spans, the change is still one
// trace, each stage's span the child of the one before.
func TestPipelineTraceAcrossStageProcesses(t *testing.T) {
	harness.Nginx(t)
	bin := harness.Binary(t)
	ns := harness.StartNATS(t)
	receiver := harness.StartOTLP(t)
	seen := watchBus(t, ns.ClientURL(), ns.Keys)

	dir := t.TempDir()
	port := harness.StartEcho(t, bin, "echo-a", "a-1")
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", port))
	httpAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	common := []string{"--nats", ns.ClientURL(), "--nats-keys", ns.Keys, "--manifests", dir, "--state-dir", harness.StateDir(t),
		"--http-addr", httpAddr, "--https-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)), "--worker-processes", "1",
		"--otlp-endpoint", receiver.Addr, "--otel-service-name", "sy-stages"}
	for _, name := range []string{"applier", "renderer", "annotations", "translator", "watcher"} {
		harness.Start(t, bin, append([]string{"stage", name}, common...)...)
	}
	harness.WriteFile(t, filepath.Join(dir, "ing.yaml"), harness.IngressYAML("default", "traced", "traced.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	client := harness.NewClient()
	harness.WaitFor(t, 60*time.Second, "traffic through five stage processes", func() error {
		r, err := harness.Do(client, "GET", "http://"+httpAddr+"/", "traced.example.com", nil)
		if err == nil && r.Status != 200 {
			err = fmt.Errorf("status %d", r.Status)
		}
		return err
	})
	expectPipelineTrace(t, receiver, seen, "sy-stages")
}

// watchBus records every message on the bus at url until the test ends,
// from the headers-only copies trace reads, as trace.
func watchBus(t *testing.T, url, keys string) *busSpans {
	t.Helper()
	opts, err := bus.ClientOptions(bus.IdentityTrace, bus.SeedFile(keys, bus.IdentityTrace))
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	seen := &busSpans{byTrace: map[string]map[string]map[string]bool{}, ingress: map[string]string{}}
	if _, err := nc.Subscribe(bus.TraceRoot+".>", seen.add); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return seen
}

// expectPipelineTrace checks the trace of the change that added the
// Ingress default/traced: for each stage a span from service with the IDs
// of one of the stage's traceparents on the bus, whose parent is such a
// span of the stage before. (A stage may have more spans in the trace: a
// redo after a plugin start, or a run that changed nothing and so put no
// message on the bus.)
func expectPipelineTrace(t *testing.T, receiver *harness.OTLPReceiver, seen *busSpans, service string) {
	t.Helper()
	subject := bus.StageSubject(bus.StageWatcher) + ".object.ingress.default.traced"
	traceID := seen.traceOf(bus.TraceSubject(subject))
	if traceID == "" {
		t.Fatalf("no message on %s", subject)
	}
	order := []string{bus.StageWatcher, bus.StageTranslator, bus.StageAnnotations, bus.StageRenderer, bus.StageApplier}
	onBus := map[string]map[string]harness.OTLPSpan{} // stage → span ID → span
	harness.WaitFor(t, 30*time.Second, "a span per stage of trace "+traceID, func() error {
		onBus = map[string]map[string]harness.OTLPSpan{}
		for _, s := range receiver.Spans() {
			if s.TraceID == traceID && seen.onBus(traceID, s.Name, s.SpanID) {
				if onBus[s.Name] == nil {
					onBus[s.Name] = map[string]harness.OTLPSpan{}
				}
				onBus[s.Name][s.SpanID] = s
			}
		}
		for _, stage := range order {
			if len(onBus[stage]) == 0 {
				return fmt.Errorf("no %s span with a traceparent on the bus yet; have %v", stage, onBus)
			}
		}
		return nil
	})
	for i, stage := range order {
		linked := false
		for _, s := range onBus[stage] {
			if s.Service != service {
				t.Errorf("%s: service.name %q, want %s", stage, s.Service, service)
			}
			if i == 0 {
				linked = linked || s.Parent == ""
			} else {
				_, ok := onBus[order[i-1]][s.Parent]
				linked = linked || ok
			}
		}
		if !linked {
			t.Errorf("%s: no span whose parent is the %s span: %v", stage, order[max(i-1, 0)], onBus)
		}
	}
}
