package metrics

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// benchDumpValues are the dict keys NGINX holds after one GET and one HEAD
// to each of n Ingresses (TestBenchMetricsScrape's traffic): for each
// label set, one bucket and the sum of every histogram.
func benchDumpValues(n int) map[string]float64 {
	values := map[string]float64{"dropped": 0}
	for i := range n {
		for _, method := range []string{"GET", "HEAD"} {
			labels := []string{"200", method, "/", "default", fmt.Sprintf("app-%d", i), "echo", "", fmt.Sprintf("app-%d.bench.example.com", i)}
			for _, h := range histograms {
				values[key(h.code, "1", labels...)] = 1
				values[key(h.code, "s", labels...)] = 0.001
			}
		}
	}
	return values
}

// BenchmarkRequestCollectorScrape is one scrape of /metrics, gzipped as
// Prometheus asks for it, with the series of 1,000 Ingresses: the
// controller's part of TestBenchMetricsScrape (NGINX's is not in it).
func BenchmarkRequestCollectorScrape(b *testing.B) {
	data := luaDump(&testing.T{}, benchDumpValues(1000))
	fetch := func(context.Context) ([]byte, error) { return data, nil }
	l := Labels{Namespace: "ns", Class: "nginx", Pod: "p-1"}
	c := New(l)
	c.RegisterRequests(newRequestCollector(l, fetch, RequestOptions{}, nil))
	h := c.Handler(func() error { return nil }, func() error { return nil })
	b.ResetTimer()
	for range b.N {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(rec, req)
		n, _ := io.Copy(io.Discard, rec.Result().Body)
		b.ReportMetric(float64(n), "bytes/scrape")
	}
}

// TestRequestTextMatchesClientGolang: the per-request series written by
// writeText are, byte for byte, what client_golang writes for the same
// dump (Collect), whatever the options, label values and failures.
func TestRequestTextMatchesClientGolang(t *testing.T) {
	odd := []string{"200", "GET", `/a\"b` + "\t", "ns", "web", "web", "", `~^[^.]+\.example\.com$`}
	values := benchDumpValues(20)
	values[key("rd", "12", odd...)] = 3
	values[key("rd", "s", odd...)] = 1e9
	values[key("cd", "2", odd...)] = 1234567
	values[key("cd", "s", odd...)] = 0.1 + 0.2
	values["dropped"] = 5
	good := func(context.Context) ([]byte, error) { return luaDump(t, values), nil }
	onlyRequests := func(context.Context) ([]byte, error) {
		return []byte("{\"buckets\":{\"rd\":[1],\"cd\":[1],\"hd\":[1],\"sd\":[1],\"rq\":[1],\"rs\":[1],\"bs\":[1]}}\nrd\x011\x01200\x01GET\x01/\x01a\x01b\x01c\x01\x01_\t1\n"), nil
	}
	failing := func(context.Context) ([]byte, error) { return nil, errors.New("connection refused") }
	for name, tc := range map[string]struct {
		fetch func(context.Context) ([]byte, error)
		o     RequestOptions
	}{
		"merged":                 {good, RequestOptions{}},
		"per host":               {good, RequestOptions{PerHost: true}},
		"classes, some excluded": {good, RequestOptions{StatusClasses: true, Exclude: []string{"requests", "bytes_sent", "ingress_upstream_latency_seconds"}}},
		"no dicts, no upstream":  {onlyRequests, RequestOptions{PerHost: true}},
		"unreadable":             {failing, RequestOptions{}},
	} {
		t.Run(name, func(t *testing.T) {
			l := Labels{Namespace: "ns", Class: "nginx", Pod: `p-"1"`}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(newRequestCollector(l, tc.fetch, tc.o, nil))
			families, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var want bytes.Buffer
			enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeTextPlain))
			for _, f := range families {
				if err := enc.Encode(f); err != nil {
					t.Fatal(err)
				}
			}
			var got bytes.Buffer
			w := bufio.NewWriter(&got)
			if err := newRequestCollector(l, tc.fetch, tc.o, nil).writeText(w); err != nil {
				t.Fatal(err)
			}
			if got.String() != want.String() {
				t.Errorf("writeText differs from client_golang:\n%s", lineDiff(want.String(), got.String()))
			}
		})
	}
}

// lineDiff shows the first lines where two texts differ.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d:\nwant %q\ngot  %q", i+1, wl, gl)
		}
	}
	return ""
}

// TestMetricsHandlerFormats: a text scrape, gzipped or not, is one valid
// exposition (the registry's families and the request ones, each once),
// and a protobuf scrape has the same families through client_golang.
func TestMetricsHandlerFormats(t *testing.T) {
	values := benchDumpValues(3)
	fetch := func(context.Context) ([]byte, error) { return luaDump(t, values), nil }
	l := Labels{Namespace: "ns", Class: "nginx", Pod: "p-1"}
	c := New(l)
	c.RegisterRequests(newRequestCollector(l, fetch, RequestOptions{}, nil))
	h := c.Handler(func() error { return nil }, func() error { return nil })
	for _, tc := range []struct{ accept, encoding string }{
		{"", ""},
		{"", "gzip"},
		{"text/plain;version=0.0.4;q=0.5,*/*;q=0.1", "gzip, deflate"},
		{"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.7,text/plain;version=0.0.4;q=0.3", "gzip"},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", tc.accept)
		req.Header.Set("Accept-Encoding", tc.encoding)
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Fatalf("%+v: %d", tc, rec.Code)
		}
		if proto := strings.Contains(rec.Header().Get("Content-Type"), "protobuf"); proto != strings.Contains(tc.accept, "protobuf") {
			t.Errorf("%+v: answered %s", tc, rec.Header().Get("Content-Type"))
		}
		var body io.Reader = rec.Body
		if rec.Header().Get("Content-Encoding") == "gzip" {
			gz, err := gzip.NewReader(rec.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = gz
		} else if strings.Contains(tc.encoding, "gzip") {
			t.Errorf("%+v: not gzipped", tc)
		}
		families := map[string]*dto.MetricFamily{}
		dec := expfmt.NewDecoder(body, expfmt.ResponseFormat(rec.Header()))
		for {
			var f dto.MetricFamily
			if err := dec.Decode(&f); err == io.EOF {
				break
			} else if err != nil {
				t.Fatalf("%+v: %v", tc, err)
			}
			if families[f.GetName()] != nil {
				t.Fatalf("%+v: %s twice", tc, f.GetName())
			}
			families[f.GetName()] = &f
		}
		for _, name := range []string{"nginx_ingress_controller_build_info", "nginx_ingress_controller_config_hash", "go_goroutines",
			"nginx_ingress_controller_requests", "nginx_ingress_controller_request_duration_seconds", "switchyard_request_metrics_read_errors_total"} {
			if families[name] == nil {
				t.Errorf("%+v: no %s", tc, name)
			}
		}
		if f := families["nginx_ingress_controller_requests"]; f != nil && len(f.GetMetric()) != 6 {
			t.Errorf("%+v: %d requests series, want 6", tc, len(f.GetMetric()))
		}
	}
}
