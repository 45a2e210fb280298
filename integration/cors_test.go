package integration

import (
	"net/http"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestCORSThroughNginx: enable-cors and the cors-* annotations through the
// real binary, plugins, NGINX and an echo backend: preflights from an
// allowed origin answered 204 by the proxy before basic auth, the headers
// on every other answer to an allowed origin (a 401 included), origins
// matched whole and case-insensitively (a wildcard for one label), no
// CORS headers for any other origin, "*" on every answer, and a location
// without CORS left to its backend. The hosts with CORS alone are routed
// in Lua (router.lua calls switchyard.cors); the one with basic auth keeps
// its server block; with SWITCHYARD_TEST_ROUTING=server-blocks all do.
func TestCORSThroughNginx(t *testing.T) {
	ing := func(name string, a map[string]string) string {
		annotations := map[string]string{}
		for k, v := range a {
			annotations[authPrefix+k] = v
		}
		return harness.AnnotatedIngressYAML("default", name, name+".example.com", annotations, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	}
	listed := map[string]string{"auth-type": "basic", "auth-secret": "users", "enable-cors": "true",
		"cors-allow-origin": "https://app.example.com, https://*.example.org:8443", "cors-expose-headers": "X-Total", "cors-max-age": "600"}
	e := newEnv(t, map[string]string{
		"secret.yaml": secretYAML("default", "users", map[string]string{"auth": "apr1:" + apr1Hash + "\n"}),
		"ingresses.yaml": strings.Join([]string{
			ing("listed", listed),
			ing("star", map[string]string{"enable-cors": "true", "cors-allow-credentials": "false"}),
			ing("routed", map[string]string{"enable-cors": "true", "cors-allow-origin": listed["cors-allow-origin"],
				"cors-expose-headers": "X-Total", "cors-max-age": "600"}),
			ing("plain", nil),
		}, "---\n"),
	})
	e.eventually("plain.example.com", "/", "the Ingress without CORS", servedBy("a-1"))
	e.eventually("star.example.com", "/", "the Ingress with CORS for every origin", servedBy("a-1"))
	e.eventually("listed.example.com", "/", "basic auth on the Ingress with listed origins", status(401))

	send := func(method, host string, headers map[string]string) harness.Response {
		t.Helper()
		r, err := e.send(method, host+".example.com", "/", headers, nil)
		if err != nil {
			t.Fatalf("%s %s: %v", method, host, err)
		}
		return r
	}
	preflight := func(origin string) map[string]string {
		return map[string]string{"Origin": origin, "Access-Control-Request-Method": "PUT"}
	}
	withOrigin := func(origin string, extra map[string]string) map[string]string {
		h := map[string]string{"Origin": origin}
		for k, v := range extra {
			h[k] = v
		}
		return h
	}

	// A preflight from a listed origin: the proxy answers, before auth,
	// echoing the origin as sent.
	r := send(http.MethodOptions, "listed", preflight("https://APP.example.com"))
	wantHeaders(t, "preflight from a listed origin", r, 204, map[string]string{
		"Access-Control-Allow-Origin":      "https://APP.example.com",
		"Access-Control-Allow-Methods":     "GET, PUT, POST, DELETE, PATCH, OPTIONS",
		"Access-Control-Allow-Headers":     "DNT,Keep-Alive,User-Agent,X-Requested-With,If-Modified-Since,Cache-Control,Content-Type,Range,Authorization",
		"Access-Control-Allow-Credentials": "true",
		"Access-Control-Expose-Headers":    "X-Total",
		"Access-Control-Max-Age":           "600",
		"Vary":                             "Origin",
	})
	if r.Echo != nil {
		t.Errorf("the preflight reached the backend")
	}
	// A request from a listed origin, authenticated: the backend answers,
	// with the CORS headers added.
	r = send(http.MethodGet, "listed", withOrigin("https://app.example.com", basicHeader("apr1", "pw")))
	wantHeaders(t, "GET from a listed origin", r, 200, map[string]string{"Access-Control-Allow-Origin": "https://app.example.com"})
	if r.Echo == nil {
		t.Errorf("GET from a listed origin was not proxied: %s", r.Body)
	}
	// Unauthenticated: the 401 carries them too, so the browser shows it.
	r = send(http.MethodGet, "listed", withOrigin("https://app.example.com", nil))
	wantHeaders(t, "401 to a listed origin", r, 401, map[string]string{"Access-Control-Allow-Origin": "https://app.example.com"})
	// One label for the wildcard, with its port.
	r = send(http.MethodGet, "listed", withOrigin("https://Team.example.org:8443", basicHeader("apr1", "pw")))
	wantHeaders(t, "GET from a wildcard origin", r, 200, map[string]string{"Access-Control-Allow-Origin": "https://Team.example.org:8443"})
	for _, origin := range []string{"https://evil.example.com", "https://app.example.com.evil.net", "http://app.example.com",
		"https://a.b.example.org:8443", "https://example.org:8443", "https://team.example.org", "null"} {
		r = send(http.MethodGet, "listed", withOrigin(origin, basicHeader("apr1", "pw")))
		if r.Status != 200 || r.Header.Get("Access-Control-Allow-Origin") != "" || r.Header.Get("Access-Control-Allow-Methods") != "" {
			t.Errorf("GET from unlisted origin %s: %d with CORS headers %v", origin, r.Status, r.Header)
		}
		// Its preflight is not answered: it meets basic auth like any request.
		if r = send(http.MethodOptions, "listed", preflight(origin)); r.Status != 401 {
			t.Errorf("preflight from unlisted origin %s: %d, want 401 from basic auth", origin, r.Status)
		}
	}

	// "*": every answer says so, with or without an Origin; no credentials.
	r = send(http.MethodGet, "star", nil)
	wantHeaders(t, "GET without Origin, cors-allow-origin *", r, 200, map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Max-Age": "1728000"})
	if got := r.Header.Get("Access-Control-Allow-Credentials"); got != "" {
		t.Errorf("cors-allow-credentials false, yet Access-Control-Allow-Credentials: %q", got)
	}
	r = send(http.MethodOptions, "star", preflight("https://anyone.example"))
	wantHeaders(t, "preflight, cors-allow-origin *", r, 204, map[string]string{"Access-Control-Allow-Origin": "*", "Access-Control-Allow-Credentials": ""})

	// Listed origins on a host without auth (Lua-routed): the same
	// answers, and a preflight from any other origin reaches the backend.
	e.eventually("routed.example.com", "/", "the Ingress with listed origins and no auth", servedBy("a-1"))
	r = send(http.MethodOptions, "routed", preflight("https://Team.example.org:8443"))
	wantHeaders(t, "preflight from a wildcard origin, no auth", r, 204, map[string]string{
		"Access-Control-Allow-Origin":   "https://Team.example.org:8443",
		"Access-Control-Expose-Headers": "X-Total",
		"Access-Control-Max-Age":        "600",
		"Vary":                          "Origin",
	})
	if r.Echo != nil {
		t.Errorf("the preflight reached the backend")
	}
	r = send(http.MethodGet, "routed", withOrigin("https://app.example.com", nil))
	wantHeaders(t, "GET from a listed origin, no auth", r, 200, map[string]string{"Access-Control-Allow-Origin": "https://app.example.com"})
	r = send(http.MethodOptions, "routed", preflight("https://evil.example.com"))
	if r.Echo == nil || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("preflight from an unlisted origin, no auth: %d, echo %v, headers %v", r.Status, r.Echo != nil, r.Header)
	}
	expectRouting(t, e.sy, map[string]bool{"routed.example.com": true, "star.example.com": true, "listed.example.com": false})

	// No CORS: OPTIONS goes to the backend, no header is added.
	r = send(http.MethodOptions, "plain", preflight("https://app.example.com"))
	if r.Echo == nil || r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Errorf("OPTIONS without enable-cors: %d, echo %v, headers %v", r.Status, r.Echo != nil, r.Header)
	}
}

// wantHeaders checks a response's status and headers.
func wantHeaders(t *testing.T, what string, r harness.Response, status int, headers map[string]string) {
	t.Helper()
	if r.Status != status {
		t.Errorf("%s: status %d, want %d (%s)", what, r.Status, status, truncate(r.Body))
	}
	for k, v := range headers {
		if got := strings.Join(r.Header.Values(k), ", "); got != v {
			t.Errorf("%s: %s: %q, want %q", what, k, got, v)
		}
	}
}
