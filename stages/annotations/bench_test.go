package annotations

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/cputime"
	"switchyard.dev/switchyard/plugins/builtin/proxy"
)

// benchProxyAnnotations are the five proxy annotations of the integration
// bench (TestBenchAnnotatedPipeline), which public Ingresses carry most.
var benchProxyAnnotations = map[string]string{
	bus.DefaultAnnotationsPrefix + "/proxy-body-size":    "64m",
	bus.DefaultAnnotationsPrefix + "/proxy-read-timeout": "3600",
	bus.DefaultAnnotationsPrefix + "/proxy-send-timeout": "3600",
	bus.DefaultAnnotationsPrefix + "/proxy-buffer-size":  "16k",
	bus.DefaultAnnotationsPrefix + "/upstream-vhost":     "internal.example.com",
}

// benchTable is the translator's table for n Ingresses, each alone on its
// host with one location and the five proxy annotations, encoded as the
// bus carries it.
func benchTable(b *testing.B, n int) map[string][]byte {
	b.Helper()
	table := make(map[string][]byte, 3*n)
	put := func(key string, v any) {
		data, err := json.Marshal(v)
		if err != nil {
			b.Fatal(err)
		}
		table[key] = data
	}
	for i := range n {
		host, name := fmt.Sprintf("h%d.bench.test", i), fmt.Sprintf("ing-%d", i)
		backend := fmt.Sprintf("default-svc-%d-http", i)
		put(bus.Key(bus.KindServer, host), &bus.Server{Hostname: host, Locations: []bus.Location{{
			Path: "/", PathType: bus.PathPrefix, Backend: backend, Ingress: "default/" + name,
			Service: fmt.Sprintf("svc-%d", i), ServicePort: "http",
		}}})
		put(bus.Key(bus.KindIngress, "default", name), &bus.IngressInfo{Namespace: "default", Name: name,
			Generation: 1, Annotations: benchProxyAnnotations})
		put(bus.Key(bus.KindBackend, backend), &bus.Backend{Name: backend, Endpoints: []bus.Endpoint{{Address: "127.0.0.1", Port: "9000"}}})
	}
	return table
}

// BenchmarkAnnotateStart annotates 10,000 Ingresses at once, as on a
// controller's start, with the proxy plugin called in-process: the stage's
// own cost (decode, key policy, validation, encode), without the plugin's
// process and wire.
func BenchmarkAnnotateStart(b *testing.B) {
	table := benchTable(b, 10000)
	cpu := cputime.Process()
	b.ResetTimer()
	for b.Loop() {
		a := builtinAnnotator(b, proxy.New())
		if _, err := a.Update(context.Background(), table); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(cputime.PerOp(cpu, b.N), "cpu-ms/op")
}
