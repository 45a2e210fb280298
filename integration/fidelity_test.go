package integration

import (
	"fmt"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestNoAutomaticRedirectForTrailingSlash: NGINX answers 301 for /foo on
// its own when a proxying location is named "/foo/". The Ingress spec and
// ingress-nginx do not: an Exact /foo/ serves /foo/ only, /foo goes where
// it would go without it; a Prefix /foo/ serves /foo, /foo/ and /foo/bar
// (a trailing slash in a Prefix rule is ignored) and redirects nothing.
func TestNoAutomaticRedirectForTrailingSlash(t *testing.T) {
	e := newEnv(t, map[string]string{
		"exact.yaml": harness.IngressYAML("default", "exact", "exact.example.com",
			harness.Path{Path: "/foo/", Type: "Exact", Service: "echo-b"}),
		"rooted.yaml": harness.IngressYAML("default", "rooted", "rooted.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"},
			harness.Path{Path: "/foo/", Type: "Exact", Service: "echo-b"}),
		"prefix.yaml": harness.IngressYAML("default", "prefix", "prefix.example.com",
			harness.Path{Path: "/foo/", Type: "Prefix", Service: "echo-b"}),
	})
	e.eventually("exact.example.com", "/foo/", "the Exact path", servedBy("b-1"))
	e.expect("exact.example.com", "/foo", 404, "")
	e.expect("exact.example.com", "/foo/bar", 404, "")

	e.eventually("rooted.example.com", "/foo/", "the Exact path beside a root", servedBy("b-1"))
	e.expect("rooted.example.com", "/foo", 200, "a-1")
	e.expect("rooted.example.com", "/foo/bar", 200, "a-1")
	e.expect("rooted.example.com", "/foobar", 200, "a-1")

	e.eventually("prefix.example.com", "/foo/", "the Prefix path", servedBy("b-1"))
	e.expect("prefix.example.com", "/foo", 200, "b-1")
	e.expect("prefix.example.com", "/foo/bar", 200, "b-1")
	e.expect("prefix.example.com", "/foobar", 404, "")
}

// TestCanaryKeptToItsHost: two canary Ingresses on two hosts, both with
// echo-a as primary and echo-b as canary, each with its own policy, and a
// third host on echo-a without a canary. In ingress-nginx the policies
// share one backend and overwrite each other, and the canary leaks to every
// host of the primary Service (kubernetes/ingress-nginx#4667, #9458,
// #5848); here each canary works on its own host and path only.
func TestCanaryKeptToItsHost(t *testing.T) {
	canary := func(name, host string, annotations map[string]string) string {
		annotations["nginx.ingress.kubernetes.io/canary"] = "true"
		return harness.AnnotatedIngressYAML("default", name, host, annotations,
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"})
	}
	e := newEnv(t, map[string]string{
		"one.yaml": harness.IngressYAML("default", "one", "one.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"one-canary.yaml": canary("one-canary", "one.example.com",
			map[string]string{"nginx.ingress.kubernetes.io/canary-by-header": "X-Canary"}),
		"two.yaml": harness.IngressYAML("default", "two", "two.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"two-canary.yaml": canary("two-canary", "two.example.com",
			map[string]string{"nginx.ingress.kubernetes.io/canary-by-cookie": "beta"}),
		"three.yaml": harness.IngressYAML("default", "three", "three.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
	})
	header := map[string]string{"X-Canary": "always"}
	cookie := map[string]string{"Cookie": "beta=always"}
	get := func(host string, headers map[string]string) harness.Response {
		t.Helper()
		r, err := harness.DoWithHeaders(harness.NewClient(), "GET", "http://"+e.sy.HTTPAddr+"/", host, headers)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		return r
	}
	harness.WaitFor(t, changeTimeout, "the canaries of both hosts", func() error {
		for _, c := range []struct {
			host    string
			headers map[string]string
		}{{"one.example.com", header}, {"two.example.com", cookie}} {
			if r := get(c.host, c.headers); !servedBy("b-1")(r) {
				return fmt.Errorf("%s: got %d %s", c.host, r.Status, truncate(r.Body))
			}
		}
		return nil
	})
	for _, c := range []struct {
		what, host string
		headers    map[string]string
		pod        string
	}{
		{"host one, its header", "one.example.com", header, "b-1"},
		{"host one, host two's cookie", "one.example.com", cookie, "a-1"},
		{"host one, nothing", "one.example.com", nil, "a-1"},
		{"host two, its cookie", "two.example.com", cookie, "b-1"},
		{"host two, host one's header", "two.example.com", header, "a-1"},
		{"host two, nothing", "two.example.com", nil, "a-1"},
		{"host three, header", "three.example.com", header, "a-1"},
		{"host three, cookie", "three.example.com", cookie, "a-1"},
	} {
		for i := range 6 {
			if r := get(c.host, c.headers); !servedBy(c.pod)(r) {
				t.Fatalf("%s: request %d got %d %s, want pod %s", c.what, i, r.Status, truncate(r.Body), c.pod)
			}
		}
	}
}
