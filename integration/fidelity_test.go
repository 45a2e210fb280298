package integration

import (
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
