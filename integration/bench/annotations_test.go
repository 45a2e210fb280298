package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/stages/annotations"
)

// TestBenchAnnotations measures what the annotations stage adds to a
// change when 1,000 Ingresses are annotated: real plugin processes (the
// example responseheader plugin, built from source, and the built-in mirror
// plugin served by the switchyard binary), the stage's Annotator, and its
// publish on an embedded bus, timed from the translator's output to the
// annotations stage's commit. Design target: <= 20 ms p99 per
// single-Ingress change.
func TestBenchAnnotations(t *testing.T) {
	requireBench(t)
	const n = 1000
	bin := harness.Binary(t)
	example := filepath.Join(t.TempDir(), "responseheader")
	if out, err := exec.Command("go", "build", "-o", example, "switchyard.dev/switchyard/plugins/examples/responseheader").CombinedOutput(); err != nil {
		t.Fatalf("build the example plugin: %v\n%s", err, out)
	}
	host := annotations.NewHost(annotations.HostConfig{Prefix: bus.DefaultAnnotationsPrefix, Sources: []annotations.PluginSource{
		{Name: "builtin mirror", Command: func() *exec.Cmd { return exec.Command(bin, "plugin", "mirror") }},
		{Name: example, Command: func() *exec.Cmd { return exec.Command(example) }},
	}}, zap.NewNop())
	ctx, cancel := context.WithCancel(context.Background())
	owners := host.Start(ctx)
	t.Cleanup(func() { cancel(); host.Wait() })
	if got := len(host.Plugins()); got != 2 {
		t.Fatalf("%d plugins running, want mirror and responseheader", got)
	}
	ann := host.NewAnnotator(owners)

	conn := harness.Bus(t, "bench-annotations")
	if _, err := conn.EnsureStream(ctx, bus.StageAnnotations); err != nil {
		t.Fatal(err)
	}
	writer := bus.NewWriter(conn, bus.StageAnnotations)

	initial := map[string][]byte{}
	for i := range n {
		addAnnotated(t, initial, i, "v0")
	}
	begin := time.Now()
	out, err := ann.Update(ctx, initial)
	if err != nil {
		t.Fatal(err)
	}
	out.Full = true
	if _, err := writer.Apply(ctx, bus.Meta{Generation: 1}, out); err != nil {
		t.Fatal(err)
	}
	first := series{name: fmt.Sprintf("first annotate + publish, %d Ingresses", n), samples: []time.Duration{time.Since(begin)}}
	checkAnnotated(t, out, 0, "v0")

	update := series{name: "one Ingress changed: Annotator.Update"}
	commit := series{name: "one Ingress changed: Update + publish"}
	for i := range 300 {
		idx := (i * 7919) % n
		value := fmt.Sprintf("v%d", i+1)
		change := map[string][]byte{}
		addAnnotated(t, change, idx, value)
		begin := time.Now()
		out, err := ann.Update(ctx, change)
		if err != nil {
			t.Fatal(err)
		}
		updated := time.Since(begin)
		if _, err := writer.Apply(ctx, bus.Meta{Generation: uint64(i + 2)}, out); err != nil {
			t.Fatal(err)
		}
		commit.samples = append(commit.samples, time.Since(begin))
		update.samples = append(update.samples, updated)
		checkAnnotated(t, out, idx, value)
	}

	var report strings.Builder
	fmt.Fprintf(&report, "\n%s\n%s\n%s\n%s\n", strings.Repeat("=", 100), first, update, commit)
	fmt.Fprintf(&report, "target: one-Ingress change <= 20ms p99 through the annotations stage (%v)\n", commit.quantile(0.99) <= 20*time.Millisecond)
	t.Log(report.String())
}

// addAnnotated puts Ingress i (its info and its server) into entries, with
// the example's response header, a proxy annotation (upstream-vhost) and a
// mirror-host without mirror-target (a warning).
func addAnnotated(t *testing.T, entries map[string][]byte, i int, value string) {
	t.Helper()
	name := fmt.Sprintf("app-%d", i)
	info, err := json.Marshal(&bus.IngressInfo{Namespace: "bench", Name: name, Annotations: map[string]string{
		"plugins.example.com/response-header":            "X-Bench: " + value,
		bus.DefaultAnnotationsPrefix + "/upstream-vhost": "backend.example.com",
		bus.DefaultAnnotationsPrefix + "/mirror-host":    "mirror.example.com",
	}})
	if err != nil {
		t.Fatal(err)
	}
	server, err := json.Marshal(&bus.Server{Hostname: name + ".example.com", Locations: []bus.Location{
		{Path: "/", PathType: bus.PathPrefix, Backend: "bench-" + name + "-80", Ingress: "bench/" + name},
	}})
	if err != nil {
		t.Fatal(err)
	}
	entries[bus.Key(bus.KindIngress, "bench", name)] = info
	entries[bus.Key(bus.KindServer, name+".example.com")] = server
}

// checkAnnotated fails unless out holds Ingress i's server with the header
// and its info with the two warnings: the numbers are of real work.
func checkAnnotated(t *testing.T, out bus.Output, i int, value string) {
	t.Helper()
	name := fmt.Sprintf("app-%d", i)
	var s bus.Server
	if err := json.Unmarshal(out.Puts[bus.Key(bus.KindServer, name+".example.com")], &s); err != nil {
		t.Fatalf("%s: server: %v", name, err)
	}
	if len(s.Locations) != 1 || s.Locations[0].Features == nil || len(s.Locations[0].Features.ResponseHeaders) != 1 ||
		s.Locations[0].Features.ResponseHeaders[0].Value != value {
		t.Fatalf("%s: annotated server %+v, want X-Bench: %s", name, s, value)
	}
	var info bus.IngressInfo
	if err := json.Unmarshal(out.Puts[bus.Key(bus.KindIngress, "bench", name)], &info); err != nil {
		t.Fatalf("%s: info: %v", name, err)
	}
	if info.Rejected || len(info.Problems) != 2 {
		t.Fatalf("%s: info %+v, want served with the two warnings", name, info)
	}
}
