package integration

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// worstRequestBound is how long one worst-case request may take. It is
// generous (a loaded test machine), and far below what the patterns the
// validator now refuses cost: "^/.*.*.*b$" took 8 to 10 s of worker CPU
// per 8 KB request (issue 10, finding 5).
const worstRequestBound = 3 * time.Second

// TestRegexWorstCaseIsBounded sends the worst requests we know of to the
// nastiest regex path and canary-by-header-pattern the validator accepts
// (two ambiguous unbounded quantifiers, a URI or header of about 7 KB that
// almost matches) and requires each to be answered within a bound, while
// the same patterns with one more ambiguous quantifier are refused.
func TestRegexWorstCaseIsBounded(t *testing.T) {
	const path, header = "/w/.*.*b$", "^.*.*b$"
	for _, refused := range []string{"/w/.*.*.*b$", "/w/(.*)(.*)(.*)b$", "/w/(a+)+b$"} {
		if bus.CheckRegexPath(refused) == nil {
			t.Fatalf("the validator accepts %q", refused)
		}
	}
	if err := bus.CheckRegexPath(path); err != nil {
		t.Fatalf("the validator refuses %q: %v", path, err)
	}
	if err := bus.ValidateCanaryPattern(header); err != nil {
		t.Fatalf("the validator refuses %q: %v", header, err)
	}
	e := newEnv(t, map[string]string{
		"regex.yaml": harness.AnnotatedIngressYAML("default", "worst", "worst.example.com",
			map[string]string{"nginx.ingress.kubernetes.io/use-regex": "true"},
			harness.Path{Path: path, Type: "ImplementationSpecific", Service: "echo-b"},
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"canary.yaml": harness.AnnotatedIngressYAML("default", "worst-canary", "worst.example.com", map[string]string{
			"nginx.ingress.kubernetes.io/canary":                   "true",
			"nginx.ingress.kubernetes.io/canary-by-header":         "X-Canary",
			"nginx.ingress.kubernetes.io/canary-by-header-pattern": header,
		}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
	})
	e.eventually("worst.example.com", "/w/xb", "the regex path", servedBy("b-1"))
	harness.WaitFor(t, changeTimeout, "the canary by header pattern", func() error {
		if r := e.getWith("worst.example.com", "/", map[string]string{"X-Canary": "xb"}); !servedBy("b-1")(r) {
			return fmt.Errorf("got %d", r.Status)
		}
		return nil
	})

	long := strings.Repeat("a", 7000) + "bc" // almost matches: fails at the very end
	var slowestPath, slowestHeader time.Duration
	for i := range 3 {
		start := time.Now()
		r := e.getWith("worst.example.com", "/w/"+long, nil)
		d := time.Since(start)
		slowestPath = max(slowestPath, d)
		if d > worstRequestBound {
			t.Errorf("worst-case path request %d took %v (status %d)", i, d, r.Status)
		}
		start = time.Now()
		r = e.getWith("worst.example.com", "/", map[string]string{"X-Canary": long})
		d = time.Since(start)
		slowestHeader = max(slowestHeader, d)
		if d > worstRequestBound {
			t.Errorf("worst-case header request %d took %v (status %d)", i, d, r.Status)
		}
		if !servedBy("a-1")(r) {
			t.Errorf("a header that does not match went to the canary or failed: %d", r.Status)
		}
	}
	t.Logf("slowest worst-case request: path %v, header %v", slowestPath, slowestHeader)
}

// TestRegexNginxRefusesIsRejected is issue 10, findings 1 and 5 at the
// validator: regex paths NGINX's PCRE refuses though Go's RE2 took them,
// and paths that backtrack catastrophically, reject their Ingress with a
// Problem naming the path; NGINX starts and every other host is served.
func TestRegexNginxRefusesIsRejected(t *testing.T) {
	bad := map[string]string{
		"posix": "/[[:alpha:]-z]", "anchor": "/^*", "colons": "/[::]",
		"nested": "/(a+)+$", "cubic": "/.*.*.*b$",
	}
	files := map[string]string{
		"good.yaml": harness.AnnotatedIngressYAML("default", "good", "good.example.com",
			map[string]string{"nginx.ingress.kubernetes.io/use-regex": "true"},
			harness.Path{Path: "/v[0-9]+/.*", Type: "ImplementationSpecific", Service: "echo-b"}),
	}
	for name, path := range bad {
		files[name+".yaml"] = harness.AnnotatedIngressYAML("default", name, name+".example.com",
			map[string]string{"nginx.ingress.kubernetes.io/use-regex": "true"},
			harness.Path{Path: path, Type: "ImplementationSpecific", Service: "echo-a"})
	}
	e := newEnv(t, files)
	e.eventually("good.example.com", "/V2/x", "the good regex Ingress", servedBy("b-1"))
	harness.WaitFor(t, changeTimeout, "a Problem for every bad regex", func() error {
		problems := problemsLogged(t, e.sy.Output.String())
		for name, path := range bad {
			got := strings.Join(problems["default/"+name], "\n")
			if !strings.Contains(got, "spec.rules[0].http.paths[0].path") || !strings.Contains(got, fmt.Sprintf("%q", path)) {
				return fmt.Errorf("default/%s: problems %q", name, got)
			}
		}
		return nil
	})
	for name := range bad {
		e.expect(name+".example.com", "/a", 404, "")
	}
}
