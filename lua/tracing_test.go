package lua_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Tests of switchyard/tracing.lua, run by TestDataPlane
// (dataplane_test.go): spans are queued in the switchyard_traces dict and
// drained through the configuration endpoint's POST /traces.

type traceDrain struct {
	Endpoint string      `json:"endpoint"`
	Service  string      `json:"service"`
	Batch    int         `json:"batch"`
	Dropped  float64     `json:"dropped"`
	Queued   int         `json:"queued"`
	Spans    []traceSpan `json:"spans"`
}

type traceSpan struct {
	TraceID string         `json:"t"`
	SpanID  string         `json:"s"`
	Parent  string         `json:"p"`
	Name    string         `json:"n"`
	Start   float64        `json:"b"`
	End     float64        `json:"e"`
	Error   bool           `json:"err"`
	Attrs   map[string]any `json:"a"`
}

func (dp *dataPlane) drainTraces(t *testing.T, max string) traceDrain {
	t.Helper()
	status, body := dp.configRequest("POST", "/traces?max="+max, "")
	if status != 200 {
		t.Fatalf("POST /traces: %d %s", status, body)
	}
	var d traceDrain
	if err := json.Unmarshal([]byte(body), &d); err != nil {
		t.Fatalf("POST /traces: %v in %.300s", err, body)
	}
	return d
}

// waitSpans drains until n spans came (the log phase runs after the
// client has its answer).
func (dp *dataPlane) waitSpans(t *testing.T, n int) []traceSpan {
	t.Helper()
	var spans []traceSpan
	deadline := time.Now().Add(30 * time.Second)
	for len(spans) < n {
		spans = append(spans, dp.drainTraces(t, "100").Spans...)
		if time.Now().After(deadline) {
			t.Fatalf("%d spans of %d drained", len(spans), n)
		}
		if len(spans) < n {
			time.Sleep(20 * time.Millisecond)
		}
	}
	return spans
}

func (dp *dataPlane) unit(t *testing.T, query url.Values) string {
	t.Helper()
	resp, err := dp.proxy.Get("http://" + dp.httpAddr + "/trace-unit?" + query.Encode())
	must(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	must(t, err)
	return string(data)
}

func (dp *dataPlane) testTraceparentParsing(t *testing.T) {
	const trace, span = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	for _, tc := range []struct{ header, want string }{
		{"00-" + trace + "-" + span + "-01", trace + " " + span + " true"},
		{"00-" + trace + "-" + span + "-00", trace + " " + span + " false"},
		// a later version may append fields
		{"01-" + trace + "-" + span + "-03-extra", trace + " " + span + " true"},
		{"00-" + trace + "-" + span + "-01-extra", "nil nil nil"},
		{"ff-" + trace + "-" + span + "-01", "nil nil nil"},
		{"00-" + strings.ToUpper(trace) + "-" + span + "-01", "nil nil nil"},
		{"00-00000000000000000000000000000000-" + span + "-01", "nil nil nil"},
		{"00-" + trace + "-0000000000000000-01", "nil nil nil"},
		{"00-" + trace + "-" + span + "-0g", "nil nil nil"},
		{"00-" + trace + "x" + span + "-01", "nil nil nil"},
		{"00-" + trace[:31] + "-" + span + "-01", "nil nil nil"},
		{"garbage", "nil nil nil"},
	} {
		if got := dp.unit(t, url.Values{"traceparent": {tc.header}}); got != tc.want {
			t.Errorf("parse %q = %q, want %q", tc.header, got, tc.want)
		}
	}
}

func (dp *dataPlane) testTraceSamplers(t *testing.T) {
	// The last 13 hex digits are the trace's fraction: low and high.
	const low, high = "4bf92f3577b34da6a3c0000000000001", "4bf92f3577b34da6a3cfffffffffffff"
	for _, tc := range []struct {
		name                        string
		sampler, ratio, parentBased string
		trace, parent               string
		want                        string
	}{
		{"always on", "AlwaysOn", "", "", low, "", "true"},
		{"always off", "AlwaysOff", "", "", low, "", "false"},
		{"unknown is off", "Sometimes", "", "", low, "", "false"},
		{"ratio keeps a low trace", "TraceIdRatioBased", "0.5", "", low, "", "true"},
		{"ratio drops a high trace", "TraceIdRatioBased", "0.5", "", high, "", "false"},
		{"ratio 0", "TraceIdRatioBased", "0", "", low, "", "false"},
		{"ratio 1", "TraceIdRatioBased", "1", "", high, "", "true"},
		{"parent sampled wins over off", "AlwaysOff", "", "1", low, "1", "true"},
		{"parent not sampled wins over on", "AlwaysOn", "", "1", low, "0", "false"},
		{"no parent: the sampler", "AlwaysOn", "", "1", low, "", "true"},
		{"parent ignored without parent-based", "AlwaysOff", "", "0", low, "1", "false"},
	} {
		q := url.Values{"sampler": {tc.sampler}, "trace": {tc.trace}, "ratio": {tc.ratio}, "parent_based": {tc.parentBased}}
		if tc.parent != "" {
			q.Set("parent", tc.parent)
		}
		if got := dp.unit(t, q); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// traceBackend answers and remembers the traceparent and tracestate it
// was sent.
type traceBackend struct {
	mu          sync.Mutex
	traceparent []string
	tracestate  []string
}

func (dp *dataPlane) startTraceBackend(t *testing.T) *traceBackend {
	t.Helper()
	tb := &traceBackend{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tb.mu.Lock()
		tb.traceparent = append(tb.traceparent, r.Header.Get("Traceparent"))
		tb.tracestate = append(tb.tracestate, r.Header.Get("Tracestate"))
		tb.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	u, _ := url.Parse(srv.URL)
	dp.postBackends(backend{Name: "traced", Service: svc("web"), Endpoints: []endpoint{{u.Hostname(), u.Port()}}})
	return tb
}

func (tb *traceBackend) last() (string, string) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.traceparent[len(tb.traceparent)-1], tb.tracestate[len(tb.tracestate)-1]
}

func (dp *dataPlane) testTracing(t *testing.T) {
	tb := dp.startTraceBackend(t)
	dp.drainTraces(t, "1000")
	const incoming = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	send := func(otel string, headers map[string]string) {
		t.Helper()
		h := map[string]string{"X-Test-Backend": "traced", "X-Test-Otel": otel}
		for k, v := range headers {
			h[k] = v
		}
		if s := dp.request(t, "GET", "/trace-test/a?q=1", h); s != 200 {
			t.Fatalf("traced request (%q): %d", otel, s)
		}
	}

	// Trusted: the backend sees the client's trace with a span of ours,
	// which is the recorded span, child of the client's.
	send("11HTTP $request_method $namespace/$ingress_name $http_authorization", map[string]string{"Traceparent": incoming, "Tracestate": "k=v", "Authorization": "secret"})
	seen, state := tb.last()
	if !strings.HasPrefix(seen, "00-4bf92f3577b34da6a3ce929d0e0e4736-") || strings.Contains(seen, "00f067aa0ba902b7") || !strings.HasSuffix(seen, "-01") || state != "k=v" {
		t.Fatalf("backend saw traceparent %q tracestate %q", seen, state)
	}
	span := dp.waitSpans(t, 1)[0]
	if "00-"+span.TraceID+"-"+span.SpanID+"-01" != seen || span.Parent != "00f067aa0ba902b7" {
		t.Errorf("span %+v is not the one the backend saw (%s)", span, seen)
	}
	// $http_authorization is not a variable an operation name may read.
	if span.Name != "HTTP GET shop/web " {
		t.Errorf("operation name %q", span.Name)
	}
	for key, want := range map[string]any{"http.method": "GET", "http.target": "/trace-test/a?q=1", "http.status_code": 200.0,
		"ingress.namespace": "shop", "ingress.name": "web", "ingress.service_name": "web", "upstream.status": 200.0} {
		if span.Attrs[key] != want {
			t.Errorf("attribute %s = %v, want %v", key, span.Attrs[key], want)
		}
	}
	if span.Attrs["upstream.address"] == nil || span.Attrs["upstream.response_time"] == nil || span.End < span.Start {
		t.Errorf("no upstream timing or bad times: %+v", span)
	}

	// Values JSON must escape (written by cjson) and plain ones (written
	// between quotes) make one valid record.
	agent := "say \"hi\" \\ \t ünï"
	send("11", map[string]string{"User-Agent": agent})
	if span := dp.waitSpans(t, 1)[0]; span.Attrs["http.user_agent"] != agent || span.Attrs["http.method"] != "GET" {
		t.Errorf("user agent %q, method %q", span.Attrs["http.user_agent"], span.Attrs["http.method"])
	}

	// Not trusted: a new trace, without the client's tracestate; the
	// default name is the location's path.
	send("10", map[string]string{"Traceparent": incoming, "Tracestate": "k=v"})
	seen, state = tb.last()
	span = dp.waitSpans(t, 1)[0]
	if strings.Contains(seen, "4bf92f3577b34da6a3ce929d0e0e4736") || state != "" || "00-"+span.TraceID+"-"+span.SpanID+"-01" != seen || span.Parent != "" {
		t.Errorf("untrusted: backend saw %q (tracestate %q), span %+v", seen, state, span)
	}
	if span.Name != "/trace-test/" {
		t.Errorf("default operation name %q", span.Name)
	}

	// Off for the location: the client's header passes as it is, no span.
	send("0-", map[string]string{"Traceparent": incoming})
	if seen, _ = tb.last(); seen != incoming {
		t.Errorf("tracing off: backend saw %q", seen)
	}
	// The ConfigMap's settings (off here): no span either.
	send("", nil)
	if seen, _ = tb.last(); seen != "" {
		t.Errorf("ConfigMap off: backend saw %q", seen)
	}
	// A parent that is not sampled still reaches the backend, not sampled
	// (AlwaysOn without parent-based: recorded all the same).
	send("11", map[string]string{"Traceparent": strings.TrimSuffix(incoming, "01") + "00"})
	span = dp.waitSpans(t, 1)[0]
	if seen, _ = tb.last(); !strings.HasSuffix(seen, "-01") || span.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("unsampled parent: backend saw %q, span %+v", seen, span)
	}
	time.Sleep(100 * time.Millisecond) // no late span of the untraced requests
	if d := dp.drainTraces(t, "100"); len(d.Spans) != 0 || d.Endpoint != "collector:4317" || d.Service != "edge" || d.Batch != 20 {
		t.Errorf("drain: %+v", d)
	}
}

// The queue holds max_queue spans (50 here); more are dropped and
// counted, and the requests are served.
func (dp *dataPlane) testTraceQueueFull(t *testing.T) {
	dp.startTraceBackend(t)
	dp.drainTraces(t, "1000")
	dropped := dp.drainTraces(t, "0").Dropped
	for i := range 70 {
		if s := dp.request(t, "GET", "/trace-test/", map[string]string{"X-Test-Backend": "traced", "X-Test-Otel": "11"}); s != 200 {
			t.Fatalf("request %d with a full queue: %d", i, s)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		d := dp.drainTraces(t, "0")
		if d.Queued == 50 && d.Dropped == dropped+20 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued %d, dropped %v (before %v)", d.Queued, d.Dropped, dropped)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := dp.drainTraces(t, "30"); len(d.Spans) != 30 || d.Queued != 20 {
		t.Errorf("a batch of 30: %d spans, %d left", len(d.Spans), d.Queued)
	}
	if d := dp.drainTraces(t, "30"); len(d.Spans) != 20 || d.Queued != 0 {
		t.Errorf("the rest: %d spans, %d left", len(d.Spans), d.Queued)
	}
}
