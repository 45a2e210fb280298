package integration

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// clientFrom is an HTTP client whose connections leave from the loopback
// address src, so NGINX sees that client address.
func clientFrom(src string) *http.Client {
	c := harness.NewClient()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c.Transport.(*http.Transport).DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}
	return c
}

// TestSourceRangesThroughNginx: allowlist-source-range (and its alias
// whitelist-source-range) lets only the listed clients through, everyone
// else gets 403; denylist-source-range wins over the allowlist; a bad list
// rejects the Ingress while its neighbour stays served.
func TestSourceRangesThroughNginx(t *testing.T) {
	ing := func(name string, a map[string]string) string {
		annotations := map[string]string{}
		for k, v := range a {
			annotations[upstreamPrefix+k] = v
		}
		return harness.AnnotatedIngressYAML("default", name, name+".example.com", annotations, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	}
	e := newEnv(t, map[string]string{"ingresses.yaml": strings.Join([]string{
		ing("only-one", map[string]string{"allowlist-source-range": "127.0.0.1/32"}),
		ing("legacy", map[string]string{"whitelist-source-range": "127.0.0.2"}),
		ing("mixed", map[string]string{"allowlist-source-range": "127.0.0.0/8", "denylist-source-range": "127.0.0.3"}),
		ing("broken", map[string]string{"allowlist-source-range": "127.0.0.300"}),
		ing("open", nil),
	}, "---\n")})
	e.eventually("open.example.com", "/", "the open Ingress", servedBy("a-1"))
	from := func(src, host string) int {
		t.Helper()
		r, err := harness.Do(clientFrom(src), http.MethodGet, "http://"+e.sy.HTTPAddr+"/", host, nil)
		if err != nil {
			t.Fatalf("%s from %s: %v", host, src, err)
		}
		return r.Status
	}
	e.eventually("only-one.example.com", "/", "the allowlist to let 127.0.0.1 in", status(200))
	for _, c := range []struct {
		src, host string
		want      int
	}{
		{"127.0.0.1", "only-one.example.com", 200}, {"127.0.0.2", "only-one.example.com", 403},
		{"127.0.0.2", "legacy.example.com", 200}, {"127.0.0.1", "legacy.example.com", 403},
		{"127.0.0.2", "mixed.example.com", 200}, {"127.0.0.3", "mixed.example.com", 403},
		{"127.0.0.2", "open.example.com", 200},
	} {
		if got := from(c.src, c.host); got != c.want {
			t.Errorf("%s from %s: %d, want %d", c.host, c.src, got, c.want)
		}
	}
	// Not served at all rather than served open: the catch-all's 404.
	if got := from("127.0.0.1", "broken.example.com"); got != 404 {
		t.Errorf("an Ingress with an unreadable allowlist answered %d, want 404 (not served)", got)
	}
	if out := e.sy.Output.String(); !strings.Contains(out, "allowlist-source-range") || !strings.Contains(out, "127.0.0.300") {
		t.Errorf("the bad allowlist is not reported:\n%s", truncate([]byte(out)))
	}
}

// TestSatisfyThroughNginx: satisfy any lets a listed address in without a
// password and asks everyone else for one; satisfy all (the default) asks
// the listed address too and still keeps unlisted ones out.
func TestSatisfyThroughNginx(t *testing.T) {
	ing := func(name, satisfy string) string {
		annotations := map[string]string{upstreamPrefix + "allowlist-source-range": "127.0.0.1"}
		for k, v := range basicAuthAnnotations("users") {
			annotations[k] = v
		}
		if satisfy != "" {
			annotations[upstreamPrefix+"satisfy"] = satisfy
		}
		return harness.AnnotatedIngressYAML("default", name, name+".example.com", annotations, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	}
	e := newEnv(t, map[string]string{
		"secret.yaml":    secretYAML("default", "users", map[string]string{"auth": "apr1:" + apr1Hash + "\n"}),
		"ingresses.yaml": ing("any", "any") + "---\n" + ing("all", ""),
	})
	e.eventually("all.example.com", "/", "basic auth on the satisfy-all Ingress", status(401))
	e.eventually("any.example.com", "/", "satisfy any to let 127.0.0.1 in without a password", status(200))
	password := basicHeader("apr1", "pw")
	for _, c := range []struct {
		src, host string
		headers   map[string]string
		want      int
	}{
		{"127.0.0.1", "any", nil, 200}, {"127.0.0.2", "any", nil, 401}, {"127.0.0.2", "any", password, 200},
		{"127.0.0.1", "all", nil, 401}, {"127.0.0.1", "all", password, 200}, {"127.0.0.2", "all", password, 403},
	} {
		r, err := harness.DoWithHeaders(clientFrom(c.src), http.MethodGet, "http://"+e.sy.HTTPAddr+"/", c.host+".example.com", c.headers)
		if err != nil {
			t.Fatalf("%s from %s: %v", c.host, c.src, err)
		}
		if r.Status != c.want {
			t.Errorf("satisfy %s, from %s, password %t: %d, want %d", c.host, c.src, c.headers != nil, r.Status, c.want)
		}
	}
}
