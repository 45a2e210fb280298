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
	passes := map[string]string{"nginx.ingress.kubernetes.io/disable-proxy-intercept-errors": "true"}
	e.write("passes.yaml", harness.AnnotatedIngressYAML("default", "passes", "passes.example.com", passes,
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})+"---\n"+
		harness.AnnotatedIngressYAML("default", "passes-down", "passes-down.example.com", passes,
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

	// disable-proxy-intercept-errors: the backend's own 503 reaches the
	// client; NGINX's own 503 (no endpoint) still gets the page.
	e.eventually("passes.example.com", "/", "the Ingress that lets errors pass", servedBy("a-1"))
	e.expect("passes.example.com", "/status/503", 503, "a-1")
	e.eventually("passes-down.example.com", "/", "the error page for NGINX's own 503", servedBy("b-1"))

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

// TestCustomHTTPErrorsWithAuth: intercepting errors leaves external auth
// intact: the auth service's 401 and 403 reach the client as they are
// unless the Ingress lists them, auth-signin keeps its 401 redirect, and
// an authorized request still gets the error page for a listed code.
func TestCustomHTTPErrorsWithAuth(t *testing.T) {
	authURL, _ := startAuthService(t)
	e := newBackends(t)
	e.write("config.yaml", configMapYAML(map[string]string{"custom-http-errors": "502,503"}))
	e.write("ext.yaml", harness.AnnotatedIngressYAML("default", "ext", "ext.example.com", map[string]string{
		authPrefix + "auth-url": authURL + "/check",
	}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.write("signin.yaml", harness.AnnotatedIngressYAML("default", "signin", "signin.example.com", map[string]string{
		authPrefix + "auth-url":           authURL + "/check",
		authPrefix + "auth-signin":        "https://login.example.com/start",
		authPrefix + "custom-http-errors": "401,403",
	}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName, "--default-backend-service", "default/echo-b")

	e.eventually("ext.example.com", "/", "external auth to refuse", status(401))
	if r := e.getWith("ext.example.com", "/", map[string]string{"Authorization": "forbidden"}); r.Status != 403 || r.Echo != nil {
		t.Errorf("forbidden: got %d %s, want the auth service's 403", r.Status, truncate(r.Body))
	}
	if r := e.getWith("ext.example.com", "/", map[string]string{"Authorization": "ok"}); !servedBy("a-1")(r) {
		t.Errorf("authorized: got %d %s", r.Status, truncate(r.Body))
	}
	r := e.getWith("ext.example.com", "/status/503", map[string]string{"Authorization": "ok"})
	if !servedBy("b-1")(r) {
		t.Fatalf("authorized 503: got %d %s, want the default backend's page", r.Status, truncate(r.Body))
	}
	expectErrorHeaders(t, r, "503", "/status/503", "ext", "echo-a")

	// auth-signin keeps 401 (a redirect); the listed 403 gets the page.
	e.eventually("signin.example.com", "/", "signin to redirect", status(302))
	r = e.getWith("signin.example.com", "/", map[string]string{"Authorization": "forbidden"})
	if !servedBy("b-1")(r) || r.Echo.Headers["X-Code"][0] != "403" {
		t.Errorf("forbidden with 403 listed: got %d %s, want the 403 page", r.Status, truncate(r.Body))
	}
}
