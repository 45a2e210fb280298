package integration

import (
	"fmt"
	"net/http"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestCustomHTTPErrors: custom-http-errors from the ConfigMap and per
// Ingress, the default-backend annotation and --default-backend-service,
// through real NGINX and real echo backends. The echo backends answer
// /status/NNN with that status; the error backends see what NGINX sends
// them (X-Code and the rest) and say so in their reply.
func TestCustomHTTPErrors(t *testing.T) {
	e := newBackends(t) // echo-a (a-1), echo-b (b-1): the global default backend
	bin := harness.Binary(t)
	pagesPort := harness.StartEcho(t, bin, "pages", "err-1")
	e.write("more-services.yaml", harness.ServiceYAML("default", "pages", pagesPort)+"---\n"+harness.ServiceYAML("default", "empty"))
	e.write("config.yaml", configMapYAML(map[string]string{"custom-http-errors": "503"}))
	e.write("app.yaml", harness.IngressYAML("default", "app", "app.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.write("own.yaml", harness.AnnotatedIngressYAML("default", "own", "own.example.com",
		map[string]string{"nginx.ingress.kubernetes.io/custom-http-errors": "404,502", "nginx.ingress.kubernetes.io/default-backend": "pages"},
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.write("down.yaml", harness.AnnotatedIngressYAML("default", "down", "down.example.com",
		map[string]string{"nginx.ingress.kubernetes.io/default-backend": "pages"},
		harness.Path{Path: "/", Type: "Prefix", Service: "empty"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName, "--default-backend-service", "default/echo-b")

	// The ConfigMap's 503 goes to --default-backend-service, as a GET of /
	// (query kept, as ingress-nginx) without the body, with the headers
	// ingress-nginx sends.
	e.eventually("app.example.com", "/", "the app", servedBy("a-1"))
	r := e.eventually("app.example.com", "/status/503", "the 503 page of the default backend", servedBy("b-1"))
	expectErrorHeaders(t, r, "503", "/status/503", "app", "echo-a")
	post, err := harness.Do(harness.NewClient(), http.MethodPost, "http://"+e.sy.HTTPAddr+"/status/503?q=1", "app.example.com", []byte("body"))
	if err != nil || !servedBy("b-1")(post) || post.Echo.Method != http.MethodGet || post.Echo.Path != "/?q=1" || post.Echo.BodyBytes != 0 {
		t.Fatalf("POST intercepted: %v %d %+v", err, post.Status, post.Echo)
	}
	expectErrorHeaders(t, post, "503", "/status/503?q=1", "app", "echo-a")
	// A code not listed passes through from the backend.
	e.expect("app.example.com", "/status/404", 404, "a-1")

	// The annotation replaces the ConfigMap's list for its Ingress, and its
	// default-backend serves the pages.
	r = e.eventually("own.example.com", "/status/404", "the annotation's 404 page", servedBy("err-1"))
	expectErrorHeaders(t, r, "404", "/status/404", "own", "echo-a")
	e.eventually("own.example.com", "/status/502", "the annotation's 502 page", servedBy("err-1"))
	e.expect("own.example.com", "/status/503", 503, "a-1")

	// A Service without endpoints is served by the default-backend.
	e.eventually("down.example.com", "/x", "the default-backend of a Service without endpoints", servedBy("err-1"))
	// No Ingress matches: --default-backend-service answers.
	e.expect("unknown.example.com", "/", 200, "b-1")
}

// expectErrorHeaders checks what the error backend was told.
func expectErrorHeaders(t *testing.T, r harness.Response, code, uri, ingress, service string) {
	t.Helper()
	want := map[string]string{"X-Code": code, "X-Original-Uri": uri, "X-Namespace": "default",
		"X-Ingress-Name": ingress, "X-Service-Name": service, "X-Service-Port": "http"}
	for name, v := range want {
		if got := r.Echo.Headers[name]; len(got) != 1 || got[0] != v {
			t.Errorf("%s: error backend got %s %q, want %q", code, name, got, v)
		}
	}
	if id := r.Echo.Headers["X-Request-Id"]; len(id) != 1 || id[0] == "" {
		t.Errorf("%s: no X-Request-ID: %v", code, fmt.Sprint(r.Echo.Headers))
	}
}
