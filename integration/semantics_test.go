package integration

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

const configMapName = "switchyard-system/switchyard"

func configMapYAML(data map[string]string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: switchyard, namespace: switchyard-system}\ndata:\n")
	for k, v := range data {
		fmt.Fprintf(&b, "  %s: %q\n", k, v)
	}
	return b.String()
}

func (e *env) expect(host, path string, wantStatus int, wantPod string) harness.Response {
	e.t.Helper()
	r, err := e.sy.Get(host, path)
	if err != nil {
		e.t.Fatalf("%s%s: %v", host, path, err)
	}
	if r.Status != wantStatus || (wantPod != "" && (r.Echo == nil || r.Echo.Pod != wantPod)) {
		pod := ""
		if r.Echo != nil {
			pod = r.Echo.Pod
		}
		e.t.Fatalf("%s%s: got %d from %q, want %d from %q", host, path, r.Status, pod, wantStatus, wantPod)
	}
	return r
}

// TestWildcardHostMatchesOneLabel: "*.wild.example.com" serves exactly one
// label in front, case-insensitively; an exact host it covers keeps its
// own Ingress; a redirect of a wildcard names the request's host. The
// wildcards are routed in Lua (router.lua tries the exact name, then the
// parent's wildcard); the covered exact host keeps a server block, as
// NGINX would choose the wildcard's over the catch-all.
func TestWildcardHostMatchesOneLabel(t *testing.T) {
	e := newEnv(t, map[string]string{
		"wild.yaml": harness.IngressYAML("default", "wild", "*.wild.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"exact.yaml": harness.IngressYAML("default", "exact", "x.wild.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		"forced.yaml": annotated(harness.IngressYAML("default", "forced", "*.forced.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}), map[string]string{"force-ssl-redirect": "true"}),
	})
	e.eventually("a.wild.example.com", "/", "the wildcard host", servedBy("a-1"))
	e.expect("B.Wild.Example.com", "/", 200, "a-1")
	e.expect("wild.example.com", "/", 404, "")
	e.expect("a.b.wild.example.com", "/", 404, "")
	e.eventually("x.wild.example.com", "/", "the exact host the wildcard covers", servedBy("b-1"))
	httpsPort := strings.Split(e.sy.HTTPSAddr, ":")[1]
	e.eventually("a.forced.example.com", "/p", "the wildcard's forced redirect", status(308))
	if r := e.expect("a.forced.example.com", "/p", 308, ""); r.Header.Get("Location") != "https://a.forced.example.com:"+httpsPort+"/p" {
		t.Errorf("Location %q, want the request's host", r.Header.Get("Location"))
	}
	expectRouting(t, e.sy, map[string]bool{"*.wild.example.com": true, "*.forced.example.com": true, "x.wild.example.com": false})
}

func TestPathsFromSeveralIngressesLongestMatchWins(t *testing.T) {
	e := newEnv(t, map[string]string{
		"one.yaml": harness.IngressYAML("default", "one", "paths.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"},
			harness.Path{Path: "/api", Type: "Exact", Service: "echo-b"}),
		"two.yaml": harness.IngressYAML("default", "two", "paths.example.com",
			harness.Path{Path: "/api", Type: "Prefix", Service: "echo-a"},
			harness.Path{Path: "/api/v2/", Type: "Prefix", Service: "echo-b"}),
	})
	e.eventually("paths.example.com", "/api/v2/x", "paths of both Ingresses", servedBy("b-1"))
	e.expect("paths.example.com", "/api", 200, "b-1")     // Exact beats Prefix for the same path
	e.expect("paths.example.com", "/api/x", 200, "a-1")   // Prefix /api
	e.expect("paths.example.com", "/api/v2", 200, "b-1")  // trailing slash in the rule ignored
	e.expect("paths.example.com", "/api/v2x", 200, "a-1") // whole elements only
	e.expect("paths.example.com", "/other", 200, "a-1")   // root
}

func TestOlderIngressWinsAConflict(t *testing.T) {
	// The newer Ingress sorts first by file name; age decides, not order.
	newer := strings.Replace(harness.IngressYAML("default", "newer", "conflict.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		"metadata: {name: newer, namespace: default}", "metadata: {name: newer, namespace: default, creationTimestamp: \"2026-02-01T00:00:00Z\"}", 1)
	older := strings.Replace(harness.IngressYAML("default", "older", "conflict.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"metadata: {name: older, namespace: default}", "metadata: {name: older, namespace: default, creationTimestamp: \"2026-01-01T00:00:00Z\"}", 1)
	e := newEnv(t, map[string]string{"a-newer.yaml": newer, "b-older.yaml": older})
	e.eventually("conflict.example.com", "/", "the older Ingress", servedBy("a-1"))
	if out := e.sy.Output.String(); !strings.Contains(out, "PathConflict") || !strings.Contains(out, "default/newer") {
		t.Errorf("the losing Ingress is not reported:\n%s", out)
	}
}

func TestRulelessIngressIsTheCatchAll(t *testing.T) {
	catchAll := `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: catch-all, namespace: default}
spec:
  ingressClassName: switchyard
  defaultBackend: {service: {name: echo-b, port: {name: http}}}
`
	e := newEnv(t, map[string]string{"catch.yaml": catchAll})
	e.eventually("anything.example.com", "/x", "the catch-all", servedBy("b-1"))
}

func TestSSLRedirectAndHSTS(t *testing.T) {
	e := newEnv(t, nil)
	cert, key := harness.SelfSigned(t, "tls.example.com")
	e.write("tls.yaml", harness.TLSIngressYAML("default", "tls", "tls.example.com", "echo-a", cert, key))
	r := e.eventually("tls.example.com", "/path?q=1", "the redirect to HTTPS", status(308))
	port := strings.Split(e.sy.HTTPSAddr, ":")[1]
	if loc := r.Header.Get("Location"); loc != "https://tls.example.com:"+port+"/path?q=1" {
		t.Fatalf("Location %q", loc)
	}
	var tlsResp harness.Response
	harness.WaitFor(t, changeTimeout, "the host over HTTPS", func() error {
		var err error
		if tlsResp, err = e.sy.GetTLS("tls.example.com", "/"); err == nil && !servedBy("a-1")(tlsResp) {
			err = fmt.Errorf("status %d", tlsResp.Status)
		}
		return err
	})
	if h := tlsResp.Header.Get("Strict-Transport-Security"); h != "max-age=31536000; includeSubDomains" {
		t.Fatalf("HSTS header %q", h)
	}
	// A host without TLS is not redirected and gets no HSTS.
	e.write("plain.yaml", harness.IngressYAML("default", "plain", "plain.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	plain := e.eventually("plain.example.com", "/", "the plain host", servedBy("b-1"))
	if plain.Header.Get("Strict-Transport-Security") != "" {
		t.Fatal("HSTS on plain HTTP")
	}
	// Over HTTPS too, once every worker has the new host: a worker of the
	// previous generation may still take a connection just after a reload.
	var plainTLS harness.Response
	harness.WaitFor(t, changeTimeout, "the plain host over HTTPS", func() error {
		var err error
		if plainTLS, err = e.sy.GetTLS("plain.example.com", "/"); err == nil && !servedBy("b-1")(plainTLS) {
			err = fmt.Errorf("status %d", plainTLS.Status)
		}
		return err
	})
	if h := plainTLS.Header.Get("Strict-Transport-Security"); h != "" {
		t.Fatalf("HTTPS to a host without TLS has HSTS %q", h)
	}

	// Adding TLS to that existing host needs no reload: the certificate
	// goes to Lua, and the redirect follows it.
	workers := e.sy.WorkerPIDs(t)
	cert2, key2 := harness.SelfSigned(t, "plain.example.com")
	e.write("plain.yaml", harness.TLSIngressYAML("default", "plain", "plain.example.com", "echo-b", cert2, key2))
	e.eventually("plain.example.com", "/", "the redirect for the newly TLS host", status(308))
	if err := harness.ExpectCertificatePEM(e.sy.HTTPSAddr, "plain.example.com", cert2); err != nil {
		t.Fatal(err)
	}
	if after := e.sy.WorkerPIDs(t); !slices.Equal(sorted(workers), sorted(after)) {
		t.Fatalf("adding TLS to a host reloaded NGINX: workers %v, then %v", workers, after)
	}
}

func TestControllerConfigMap(t *testing.T) {
	e := newBackends(t)
	cert, key := harness.SelfSigned(t, "tls.example.com")
	e.write("tls.yaml", harness.TLSIngressYAML("default", "tls", "tls.example.com", "echo-a", cert, key))
	e.write("config.yaml", configMapYAML(map[string]string{"ssl-redirect": "false", "proxy-body-size": "2m", "hsts": "maybe"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName, "--default-backend-service", "default/echo-b")

	e.eventually("tls.example.com", "/", "no redirect with ssl-redirect false", servedBy("a-1"))
	body := make([]byte, 1536<<10)
	r, err := harness.Do(harness.NewClient(), "POST", "http://"+e.sy.HTTPAddr+"/", "tls.example.com", body)
	if err != nil || r.Status != 200 {
		t.Fatalf("1.5 MiB body with proxy-body-size 2m: %v %d", err, r.Status)
	}
	// The invalid hsts value is reported and its default (on) kept.
	tlsResp, err := e.sy.GetTLS("tls.example.com", "/")
	if err != nil || tlsResp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatalf("HSTS default not kept: %v %v", err, tlsResp.Header)
	}
	if out := e.sy.Output.String(); !strings.Contains(out, "data.hsts") {
		t.Errorf("the invalid hsts value is not reported:\n%s", out)
	}
	// --default-backend-service answers unknown hosts.
	e.expect("unknown.example.com", "/", 200, "b-1")

	// A ConfigMap change applies: back to 1m, the same body is refused.
	e.write("config.yaml", configMapYAML(map[string]string{"ssl-redirect": "false", "proxy-body-size": "1m"}))
	harness.WaitFor(t, changeTimeout, "proxy-body-size 1m", func() error {
		r, err := harness.Do(harness.NewClient(), "POST", "http://"+e.sy.HTTPAddr+"/", "tls.example.com", body)
		if err == nil && r.Status != 413 {
			err = fmt.Errorf("status %d", r.Status)
		}
		return err
	})
}

func TestForwardedHeadersAndWebSocketUpgrade(t *testing.T) {
	e := newEnv(t, map[string]string{"app.yaml": harness.IngressYAML("default", "app", "app.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})})
	e.eventually("app.example.com", "/", "the app", servedBy("a-1"))
	req := func() harness.EchoReply {
		r, err := harness.DoWithHeaders(harness.NewClient(), "GET", "http://"+e.sy.HTTPAddr+"/ws", "app.example.com",
			map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "203.0.113.7", "Upgrade": "websocket", "Connection": "Upgrade"})
		if err != nil || r.Echo == nil {
			t.Fatalf("%v %+v", err, r)
		}
		return *r.Echo
	}
	got := req()
	// use-forwarded-headers is off by default: a client cannot claim HTTPS.
	if p := got.Headers["X-Forwarded-Proto"]; len(p) != 1 || p[0] != "http" {
		t.Errorf("X-Forwarded-Proto %q, want http", p)
	}
	if f := got.Headers["X-Forwarded-For"]; len(f) != 1 || f[0] != "127.0.0.1" {
		t.Errorf("X-Forwarded-For %q, want 127.0.0.1", f)
	}
	if u := got.Headers["Upgrade"]; len(u) != 1 || u[0] != "websocket" {
		t.Errorf("Upgrade %q: WebSocket upgrades must pass through", u)
	}
	if c := got.Headers["Connection"]; len(c) != 1 || c[0] != "upgrade" {
		t.Errorf("Connection %q, want upgrade", c)
	}
}

func TestExternalNameService(t *testing.T) {
	bin := harness.Binary(t)
	port := harness.StartEcho(t, bin, "external", "ext-1")
	dns := harness.StartDNS(t, map[string]net.IP{"api.partner.test": net.ParseIP("127.0.0.1")})
	dir := externalNameDir(t, port)
	sy := harness.StartSwitchyard(t, dir, "--resolver", dns)
	harness.WaitFor(t, changeTimeout, "the ExternalName Service", func() error {
		r, err := sy.Get("partner.example.com", "/x")
		if err == nil && !servedBy("ext-1")(r) {
			err = fmt.Errorf("status %d: %s", r.Status, truncate(r.Body))
		}
		return err
	})
}
