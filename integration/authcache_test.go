package integration

import (
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// countingAuth is a loopback auth service that counts what reaches it:
// requests by Authorization value and accepted TCP connections. An
// Authorization starting with "ok" passes, anything else is a 401. Its
// answers carry no Cache-Control, Expires or Set-Cookie, so a proxy cache
// keeps them for as long as proxy_cache_valid says.
type countingAuth struct {
	url   string
	mu    sync.Mutex
	hits  map[string]int
	conns int
	last  http.Header
}

func startCountingAuth(t *testing.T) *countingAuth {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &countingAuth{url: "http://" + l.Addr().String(), hits: map[string]int{}}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			a.mu.Lock()
			a.hits[r.Header.Get("Authorization")]++
			a.last = r.Header.Clone()
			a.mu.Unlock()
			if strings.HasPrefix(r.Header.Get("Authorization"), "ok") {
				w.Header().Set("X-Auth-User", "alice")
				w.WriteHeader(200)
				return
			}
			w.WriteHeader(401)
		}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				a.mu.Lock()
				a.conns++
				a.mu.Unlock()
			}
		},
	}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return a
}

func (a *countingAuth) hitsOf(authorization string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.hits[authorization]
}

func (a *countingAuth) connections() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.conns
}

func (a *countingAuth) lastHeader(name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.last.Get(name)
}

// TestAuthCacheKeepaliveAndHeadersThroughNginx: auth-cache-key keeps the
// auth service's answers (a 401 too) so a repeated request does not reach
// it while another key does; global-auth-cache-key does the same for
// global auth; auth-keepalive carries many auth requests over few
// connections; auth-proxy-set-headers' ConfigMap reaches the auth service,
// and a missing one, or one of another namespace, answers 503.
func TestAuthCacheKeepaliveAndHeadersThroughNginx(t *testing.T) {
	cached, pooled, global := startCountingAuth(t), startCountingAuth(t), startCountingAuth(t)
	ing := func(name string, a map[string]string) string {
		annotations := map[string]string{}
		for k, v := range a {
			annotations[authPrefix+k] = v
		}
		return harness.AnnotatedIngressYAML("default", name, name+".example.com", annotations, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	}
	e := newBackends(t)
	e.write("configmap.yaml", configMapYAML(map[string]string{"global-auth-url": global.url + "/global",
		"global-auth-cache-key": "$http_authorization", "global-auth-cache-duration": "200 401 10m"}))
	e.write("headers.yaml", defaultConfigMapYAML("auth-headers", map[string]string{"X-Tenant": "blue", "X-Auth-Scope": "read write"}))
	e.write("ingresses.yaml", strings.Join([]string{
		ing("cached", map[string]string{"auth-url": cached.url + "/check", "auth-cache-key": "$http_authorization",
			"auth-cache-duration": "200 10m, 401 10m"}),
		ing("pooled", map[string]string{"auth-url": pooled.url + "/check", "auth-keepalive": "4"}),
		ing("shared", map[string]string{"auth-url": pooled.url + "/shared", "auth-keepalive": "4", "auth-keepalive-share-vars": "true"}),
		ing("headers", map[string]string{"auth-url": cached.url + "/headers", "auth-proxy-set-headers": "auth-headers"}),
		ing("missing", map[string]string{"auth-url": cached.url + "/missing", "auth-proxy-set-headers": "no-such-configmap"}),
		ing("otherns", map[string]string{"auth-url": cached.url + "/otherns", "auth-proxy-set-headers": "kube-system/auth-headers"}),
		ing("plain", nil),
	}, "---\n"))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	for _, host := range []string{"cached", "pooled", "shared", "headers", "plain"} {
		e.eventuallyWithHeaders(host+".example.com", "/", map[string]string{"Authorization": "ok-warm"}, host+" to be served behind auth", servedBy("a-1"))
	}
	t.Run("cache", func(t *testing.T) { checkAuthCache(t, e, "cached.example.com", cached) })
	t.Run("global cache", func(t *testing.T) { checkAuthCache(t, e, "plain.example.com", global) })
	t.Run("keepalive", func(t *testing.T) {
		before := pooled.connections()
		const n = 20
		for i := 0; i < n; i++ {
			if r := e.getWith("pooled.example.com", "/", map[string]string{"Authorization": "ok-pooled"}); r.Status != 200 {
				t.Fatalf("request %d: got %d, want 200", i, r.Status)
			}
		}
		used := pooled.connections() - before
		t.Logf("auth-keepalive: %d auth requests over %d new connections", pooled.hitsOf("ok-pooled"), used)
		if used >= n || pooled.hitsOf("ok-pooled") != n {
			t.Errorf("%d auth requests (want %d) used %d new connections, want fewer than %d", pooled.hitsOf("ok-pooled"), n, used, n)
		}
	})
	t.Run("share vars", func(t *testing.T) {
		r := e.getWith("pooled.example.com", "/", map[string]string{"Authorization": "ok-own"})
		if own := pooled.lastHeader("X-Request-Id"); r.Echo == nil || own == "" || own == first(r.Echo.Headers, "X-Request-Id") {
			t.Errorf("share-vars off: auth X-Request-ID %q, want one of its own (backend's %q)", own, first(r.Echo.Headers, "X-Request-Id"))
		}
		r = e.getWith("shared.example.com", "/", map[string]string{"Authorization": "ok-shared"})
		if got := pooled.lastHeader("X-Request-Id"); r.Echo == nil || got == "" || got != first(r.Echo.Headers, "X-Request-Id") {
			t.Errorf("share-vars on: auth X-Request-ID %q, want the backend's", got)
		}
	})
	t.Run("proxy set headers", func(t *testing.T) {
		e.getWith("headers.example.com", "/", map[string]string{"Authorization": "ok-headers"})
		if got, scope := cached.lastHeader("X-Tenant"), cached.lastHeader("X-Auth-Scope"); got != "blue" || scope != "read write" {
			t.Errorf("auth request X-Tenant %q X-Auth-Scope %q, want the ConfigMap's", got, scope)
		}
		for _, host := range []string{"missing", "otherns"} {
			if r := e.getWith(host+".example.com", "/", map[string]string{"Authorization": "ok-" + host}); r.Status != 503 || r.Echo != nil {
				t.Errorf("%s auth-proxy-set-headers ConfigMap: got %d (backend answered: %v), want 503", host, r.Status, r.Echo != nil)
			}
			if n := cached.hitsOf("ok-" + host); n != 0 {
				t.Errorf("%s: the auth service was asked %d times for a denied location", host, n)
			}
		}
	})
}

// checkAuthCache: the same credentials twice reach the auth service once,
// other credentials reach it, and a refusal (401) is cached too.
func checkAuthCache(t *testing.T, e *env, host string, auth *countingAuth) {
	t.Helper()
	for _, c := range []struct {
		authorization string
		status        int
	}{{"ok-1", 200}, {"ok-2", 200}, {"denied", 401}} {
		for i := 0; i < 3; i++ {
			if r := e.getWith(host, "/", map[string]string{"Authorization": c.authorization}); r.Status != c.status {
				t.Fatalf("%s %s request %d: got %d, want %d", host, c.authorization, i, r.Status, c.status)
			}
		}
		if n := auth.hitsOf(c.authorization); n != 1 {
			t.Errorf("%s: three requests with %q reached the auth service %d times, want once", host, c.authorization, n)
		}
	}
}
