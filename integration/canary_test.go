package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

func canaryYAML(weight string) string {
	return harness.AnnotatedIngressYAML("default", "app-canary", "canary.example.com", map[string]string{
		"nginx.ingress.kubernetes.io/canary":           "true",
		"nginx.ingress.kubernetes.io/canary-by-header": "X-Canary",
		"nginx.ingress.kubernetes.io/canary-by-cookie": "canary",
		"nginx.ingress.kubernetes.io/canary-weight":    weight,
		// Ignored on a canary, as in ingress-nginx: a snippet would
		// otherwise reject the Ingress.
		"nginx.ingress.kubernetes.io/configuration-snippet": "return 418;",
	}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"})
}

// getWith sends GET with extra headers.
func (e *env) getWith(host, path string, headers map[string]string) harness.Response {
	e.t.Helper()
	r, err := harness.DoWithHeaders(harness.NewClient(), http.MethodGet, "http://"+e.sy.HTTPAddr+path, host, headers)
	if err != nil {
		e.t.Fatalf("%s%s: %v", host, path, err)
	}
	return r
}

// expectAll sends n requests and wants each answered by pod.
func (e *env) expectAll(n int, headers map[string]string, pod, what string) {
	e.t.Helper()
	for i := range n {
		if r := e.getWith("canary.example.com", "/", headers); !servedBy(pod)(r) {
			e.t.Fatalf("%s: request %d got %d %s, want pod %s", what, i, r.Status, truncate(r.Body), pod)
		}
	}
}

// eventuallyWith polls with headers until pod answers.
func (e *env) eventuallyWith(headers map[string]string, pod, what string) {
	e.t.Helper()
	harness.WaitFor(e.t, changeTimeout, what, func() error {
		if r := e.getWith("canary.example.com", "/", headers); !servedBy(pod)(r) {
			return fmt.Errorf("got %d %s", r.Status, truncate(r.Body))
		}
		return nil
	})
}

func TestCanaryRouting(t *testing.T) {
	e := newEnv(t, map[string]string{
		"primary.yaml": harness.IngressYAML("default", "app", "canary.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"canary.yaml": canaryYAML("0"),
	})
	always, never := map[string]string{"X-Canary": "always"}, map[string]string{"X-Canary": "never"}
	e.eventuallyWith(always, "b-1", "the canary by header")
	e.expectAll(10, always, "b-1", "header always")
	e.expectAll(10, never, "a-1", "header never")
	e.expectAll(10, nil, "a-1", "weight 0")
	e.expectAll(10, map[string]string{"Cookie": "canary=always"}, "b-1", "cookie always")
	e.expectAll(10, map[string]string{"Cookie": "canary=always", "X-Canary": "never"}, "a-1", "header beats cookie")
	workers := e.sy.WorkerPIDs(t)

	// Weight changes are backend pushes to Lua: no reload.
	e.write("canary.yaml", canaryYAML("100"))
	e.eventuallyWith(nil, "b-1", "weight 100")
	e.expectAll(20, nil, "b-1", "weight 100")
	e.expectAll(10, map[string]string{"Cookie": "canary=never"}, "a-1", "cookie never beats weight 100")

	e.write("canary.yaml", canaryYAML("50"))
	e.eventuallyWith(nil, "a-1", "weight 50")
	counts := map[string]int{}
	for range 200 {
		if r := e.getWith("canary.example.com", "/", nil); r.Echo != nil {
			counts[r.Echo.Pod]++
		}
	}
	if counts["a-1"]+counts["b-1"] != 200 || counts["b-1"] < 60 || counts["b-1"] > 140 {
		t.Fatalf("weight 50 over 200 requests: %v", counts)
	}

	// From weight 50, one answer of a-1 proves nothing: wait for a run of
	// 30 (2^-30 by chance at weight 50), then expect no more canary.
	e.write("canary.yaml", canaryYAML("0"))
	harness.WaitFor(t, changeTimeout, "weight 0 again", func() error {
		for i := range 30 {
			if r := e.getWith("canary.example.com", "/", nil); !servedBy("a-1")(r) {
				return fmt.Errorf("request %d of the run got %d %s", i, r.Status, truncate(r.Body))
			}
		}
		return nil
	})
	e.expectAll(20, nil, "a-1", "weight 0 again")
	if after := e.sy.WorkerPIDs(t); !slices.Equal(sorted(workers), sorted(after)) {
		t.Fatalf("NGINX reloaded on a canary weight change: workers %v, then %v", workers, after)
	}

	// Without the canary Ingress, the primary serves everything.
	if err := os.Remove(filepath.Join(e.dir, "canary.yaml")); err != nil {
		t.Fatal(err)
	}
	e.eventuallyWith(always, "a-1", "primary only after the canary is deleted")
	e.expectAll(10, always, "a-1", "canary deleted")
	e.expectAll(10, map[string]string{"Cookie": "canary=always"}, "a-1", "canary deleted")
}

// A canary without a primary is not served, and a canary whose annotations
// are invalid is dropped: the primary serves alone.
func TestCanaryWithoutPrimaryOrInvalid(t *testing.T) {
	lonely := harness.AnnotatedIngressYAML("default", "lonely", "lonely.example.com",
		map[string]string{"nginx.ingress.kubernetes.io/canary": "true"},
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"})
	bad := harness.AnnotatedIngressYAML("default", "bad-canary", "canary.example.com", map[string]string{
		"nginx.ingress.kubernetes.io/canary":                   "true",
		"nginx.ingress.kubernetes.io/canary-by-header":         "X-Canary",
		"nginx.ingress.kubernetes.io/canary-by-header-pattern": "(unclosed",
	}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"})
	e := newEnv(t, map[string]string{
		"primary.yaml": harness.IngressYAML("default", "app", "canary.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"lonely.yaml": lonely,
		"bad.yaml":    bad,
	})
	e.eventually("canary.example.com", "/", "the primary", servedBy("a-1"))
	e.expect("lonely.example.com", "/", 404, "")
	e.expectAll(10, map[string]string{"X-Canary": "(unclosed"}, "a-1", "invalid canary ignored")
	// Fixing the pattern makes the canary live, without touching the primary.
	e.write("bad.yaml", strings.Replace(bad, "(unclosed", "^v[0-9]+$", 1))
	e.eventuallyWith(map[string]string{"X-Canary": "v2"}, "b-1", "the fixed canary")
	e.expectAll(10, map[string]string{"X-Canary": "x2"}, "a-1", "pattern mismatch")
}
