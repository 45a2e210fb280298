package otelexport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// benchDrain is a drain answer of n spans as tracing.lua writes them.
func benchDrain(n int) []byte {
	spans := make([]string, n)
	for i := range spans {
		spans[i] = fmt.Sprintf(`{"t":"4bf92f3577b34da6a3ce929d0e0e%04x","s":"00f067aa0ba9%04x","p":"","n":"/","b":1700000000.123,"e":1700000000.125,"err":false,`+
			`"a":{"http.status_code":200,"http.flavor":"1.1","http.method":"GET","http.target":"/","http.scheme":"http","http.host":"traced.bench.example.com",`+
			`"http.user_agent":"Go-http-client/1.1","net.peer.ip":"127.0.0.1","ingress.namespace":"default","ingress.name":"traced","ingress.service_name":"echo",`+
			`"ingress.service_port":"80","ingress.path":"/","ingress.upstream":"default-echo-80","upstream.address":"127.0.0.1:40000","upstream.status":200,`+
			`"upstream.connect_time":0,"upstream.header_time":0.001,"upstream.response_time":0.001}}`, i, i)
	}
	return []byte(`{"endpoint":"127.0.0.1:4317","service":"nginx","delay_ms":100,"batch":4096,"dropped":0,"queued":0,"spans":[` + strings.Join(spans, ",") + `]}`)
}

// BenchmarkDrainDecode is the controller's work per drained batch before
// the exporter: decoding NGINX's answer and making the SDK's spans.
func BenchmarkDrainDecode(b *testing.B) {
	data := benchDrain(4096)
	b.ResetTimer()
	for range b.N {
		d := &drained{}
		if err := json.Unmarshal(data, d); err != nil {
			b.Fatal(err)
		}
		if len(snapshots(d.Spans, d.Service)) != 4096 {
			b.Fatal("spans lost")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4096)/1e3, "µs/span")
}

// TestLuaAttributesAreKnown: every attribute tracing.lua writes is a
// field of luaAttrs (one that is not would be dropped from the spans).
func TestLuaAttributesAreKnown(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "lua", "switchyard", "tracing.lua"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	typ := reflect.TypeFor[luaAttrs]()
	for i := range typ.NumField() {
		known[typ.Field(i).Tag.Get("json")] = true
	}
	written := regexp.MustCompile(`[,{]"([a-z_]+\.[a-z_.]+)":`).FindAllStringSubmatch(string(src), -1)
	if len(written) < 19 {
		t.Fatalf("found %d attributes in tracing.lua", len(written))
	}
	for _, m := range written {
		if !known[m[1]] {
			t.Errorf("tracing.lua writes %s, which luaAttrs does not decode", m[1])
		}
	}
	// And each decodes to its attribute.
	d := &drained{}
	if err := json.Unmarshal(benchDrain(1), d); err != nil {
		t.Fatal(err)
	}
	got := attributes(d.Spans[0].Attrs)
	if len(got) != len(known) {
		t.Errorf("%d attributes from a full span, want %d: %v", len(got), len(known), got)
	}
	for _, kv := range got {
		if kv.Key == "http.status_code" && kv.Value.AsInt64() != 200 || kv.Key == "upstream.header_time" && kv.Value.AsFloat64() != 0.001 {
			t.Errorf("attribute %s = %v", kv.Key, kv.Value.Emit())
		}
	}
}

// BenchmarkDrainExport is the controller's whole work per drained batch:
// decoding, the SDK's spans and the OTLP export to a collector in this
// process (whose decoding is in the profile too, under grpc's server).
func BenchmarkDrainExport(b *testing.B) {
	c := harness.StartSpanCounter(b)
	data := []byte(strings.Replace(string(benchDrain(4096)), "127.0.0.1:4317", c.Addr, 1))
	r := &RequestSpans{post: func(context.Context, int) (int, []byte, error) { return 200, data, nil }, onError: func(error) {}}
	defer r.shutdown()
	b.ResetTimer()
	for range b.N {
		if _, err := r.drain(context.Background(), 4096); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*4096)/1e3, "µs/span")
	if c.Spans() != int64(b.N*4096) {
		b.Fatalf("%d spans received", c.Spans())
	}
}
