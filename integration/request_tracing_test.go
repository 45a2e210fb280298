package integration

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

const otelPrefix = "nginx.ingress.kubernetes.io/"

// spanWithID waits until the receiver has the span spanID.
func spanWithID(t *testing.T, receiver *harness.OTLPReceiver, spanID string) harness.OTLPSpan {
	t.Helper()
	var found harness.OTLPSpan
	harness.WaitFor(t, changeTimeout, "request span "+spanID, func() error {
		for _, s := range receiver.Spans() {
			if s.SpanID == spanID {
				found = s
				return nil
			}
		}
		return fmt.Errorf("%d spans, none %s", len(receiver.Spans()), spanID)
	})
	return found
}

// seenTraceparent is the traceparent the echo backend was sent, split.
func seenTraceparent(t *testing.T, r harness.Response) (traceID, spanID string) {
	t.Helper()
	values := r.Echo.Headers["Traceparent"]
	if len(values) != 1 {
		t.Fatalf("backend saw traceparent %q", values)
	}
	parts := strings.Split(values[0], "-")
	if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || parts[3] != "01" {
		t.Fatalf("backend saw traceparent %q", values[0])
	}
	return parts[1], parts[2]
}

// TestRequestTraceExported: requests of Ingresses with
// enable-opentelemetry reach an OTLP receiver (the ConfigMap's
// otlp-collector-host) as spans whose trace and span IDs are those of the
// traceparent the backend saw: with trust-incoming-span (the default) in
// the client's trace, as a child of the client's span; with it false in a
// trace of its own. An Ingress without the annotation passes the client's
// traceparent untouched and records nothing.
func TestRequestTraceExported(t *testing.T) {
	receiver := harness.StartOTLP(t)
	host, port, err := net.SplitHostPort(receiver.Addr)
	if err != nil {
		t.Fatal(err)
	}
	e := newBackends(t)
	e.write("trusted.yaml", annotatedIngressYAML("trusted", map[string]string{
		otelPrefix + "enable-opentelemetry":         "true",
		otelPrefix + "opentelemetry-operation-name": "HTTP $request_method $service_name",
	}))
	e.write("untrusted.yaml", annotatedIngressYAML("untrusted", map[string]string{
		otelPrefix + "enable-opentelemetry":              "true",
		otelPrefix + "opentelemetry-trust-incoming-span": "false",
	}))
	e.write("plain.yaml", annotatedIngressYAML("plain", map[string]string{"example.com/owner": "shop"}))
	e.write("config.yaml", configMapYAML(map[string]string{
		"otlp-collector-host": host, "otlp-collector-port": port, "otel-sampler": "AlwaysOn",
		"otel-service-name": "edge", "otel-schedule-delay-millis": "100",
	}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	const clientTrace, clientSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	incoming := map[string]string{"Traceparent": "00-" + clientTrace + "-" + clientSpan + "-01"}
	served := func(r harness.Response) bool { return r.Status == 200 && r.Echo != nil }

	r := e.eventuallyWithHeaders("trusted.example.com", "/cart?id=7", incoming, "trusted Ingress served", served)
	traceID, spanID := seenTraceparent(t, r)
	if traceID != clientTrace || spanID == clientSpan {
		t.Fatalf("trusted: backend saw trace %s span %s, want the client's trace with a span of NGINX's", traceID, spanID)
	}
	span := spanWithID(t, receiver, spanID)
	if span.TraceID != clientTrace || span.Parent != clientSpan || span.Service != "edge" || span.Name != "HTTP GET echo-a" {
		t.Errorf("trusted span %+v", span)
	}
	for key, want := range map[string]string{"http.method": "GET", "http.target": "/cart?id=7", "ingress.name": "trusted",
		"ingress.namespace": "default", "ingress.service_name": "echo-a", "http.status_code": "int_value:200"} {
		if span.Attributes[key] != want {
			t.Errorf("trusted span: %s = %q, want %q", key, span.Attributes[key], want)
		}
	}
	if span.Attributes["upstream.address"] == "" || span.Attributes["upstream.response_time"] == "" {
		t.Errorf("trusted span without upstream address or timing: %v", span.Attributes)
	}

	r = e.eventuallyWithHeaders("untrusted.example.com", "/", incoming, "untrusted Ingress served", served)
	traceID, spanID = seenTraceparent(t, r)
	if traceID == clientTrace {
		t.Fatalf("untrusted: backend saw the client's trace %s", traceID)
	}
	span = spanWithID(t, receiver, spanID)
	if span.TraceID != traceID || span.Parent != "" || span.Name != "/" {
		t.Errorf("untrusted span %+v: want a root span of trace %s named after the path", span, traceID)
	}

	r = e.eventuallyWithHeaders("plain.example.com", "/", incoming, "plain Ingress served", served)
	if got := r.Echo.Headers["Traceparent"]; len(got) != 1 || got[0] != incoming["Traceparent"] {
		t.Errorf("plain: backend saw traceparent %q, want the client's", got)
	}
	for _, s := range receiver.Spans() {
		if s.Attributes["ingress.name"] == "plain" {
			t.Errorf("a span of the Ingress without tracing: %+v", s)
		}
	}
}
