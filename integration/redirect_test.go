package integration

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// annotated adds annotations (keys relative to nginx.ingress.kubernetes.io)
// to an Ingress from harness.IngressYAML.
func annotated(ingress string, annotations map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		parts = append(parts, fmt.Sprintf("%q: %q", "nginx.ingress.kubernetes.io/"+k, annotations[k]))
	}
	i := strings.Index(ingress, "}\nspec:")
	return ingress[:i] + ", annotations: {" + strings.Join(parts, ", ") + "}" + ingress[i:]
}

func location(want string) func(harness.Response) bool {
	return func(r harness.Response) bool { return r.Header.Get("Location") == want }
}

func TestRewriteTargetAndRegexPaths(t *testing.T) {
	rewrite := annotated(harness.IngressYAML("default", "rewrite", "rewrite.example.com",
		harness.Path{Path: "/something(/|$)(.*)", Type: "ImplementationSpecific", Service: "echo-b"}),
		map[string]string{"rewrite-target": "/$2", "x-forwarded-prefix": "/something"})
	// A second Ingress of the same host, without annotations: unlike
	// ingress-nginx, its Prefix path stays a Prefix path (issue 10).
	plain := harness.IngressYAML("default", "plain", "rewrite.example.com",
		harness.Path{Path: "/plain", Type: "Prefix", Service: "echo-b"})
	e := newEnv(t, map[string]string{"rewrite.yaml": rewrite, "plain.yaml": plain})

	r := e.eventually("rewrite.example.com", "/something/new/path?q=1", "the rewritten path", servedBy("b-1"))
	if r.Echo.Path != "/new/path?q=1" {
		t.Fatalf("backend saw %q, want /new/path?q=1", r.Echo.Path)
	}
	if got := r.Echo.Headers["X-Forwarded-Prefix"]; !slices.Equal(got, []string{"/something"}) {
		t.Fatalf("X-Forwarded-Prefix %q", got)
	}
	// "$" in the path regex is the end anchor; case does not matter.
	if r := e.expect("rewrite.example.com", "/SOMETHING", 200, "b-1"); r.Echo.Path != "/" {
		t.Fatalf("/SOMETHING reached the backend as %q, want /", r.Echo.Path)
	}
	// Not a match: "/somethingelse" neither continues with "/" nor ends.
	e.expect("rewrite.example.com", "/somethingelse", 404, "")
	// The other Ingress's Prefix path is still the Prefix /plain: no
	// rewrite, no X-Forwarded-Prefix, whole path elements only, and case
	// matters (ingress-nginx would make it the regex ~* ^/plain).
	if r := e.expect("rewrite.example.com", "/plain/x", 200, "b-1"); r.Echo.Path != "/plain/x" || r.Echo.Headers["X-Forwarded-Prefix"] != nil {
		t.Fatalf("/plain/x: backend saw %q with X-Forwarded-Prefix %q", r.Echo.Path, r.Echo.Headers["X-Forwarded-Prefix"])
	}
	e.expect("rewrite.example.com", "/plainly", 404, "")
	e.expect("rewrite.example.com", "/Plain", 404, "")
	// router.lua does the rewrite: the host has no server block.
	expectRouting(t, e.sy, map[string]bool{"rewrite.example.com": true})

	// A rewrite-target naming an NGINX variable is refused, and the
	// Ingress with it is not served; the other Ingress still is.
	e.write("rewrite.yaml", annotated(harness.IngressYAML("default", "rewrite", "rewrite.example.com",
		harness.Path{Path: "/something(/|$)(.*)", Type: "ImplementationSpecific", Service: "echo-b"}),
		map[string]string{"rewrite-target": "/$host"}))
	e.eventually("rewrite.example.com", "/something/x", "the rejected Ingress gone", status(404))
	e.expect("rewrite.example.com", "/plain", 200, "b-1")
}

func TestAppRoot(t *testing.T) {
	e := newEnv(t, map[string]string{"app.yaml": annotated(harness.IngressYAML("default", "app", "app.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}), map[string]string{"app-root": "/app1"})})
	e.eventually("app.example.com", "/", "the app-root redirect", status(302))
	// As ingress-nginx: $scheme://$http_host, the Host header as sent.
	r := e.expect("app.example.com", "/", 302, "")
	if loc := r.Header.Get("Location"); loc != "http://app.example.com/app1" {
		t.Fatalf("Location %q", loc)
	}
	e.expect("app.example.com", "/app1", 200, "b-1")
	e.expect("app.example.com", "/other", 200, "b-1")
}

func TestPermanentAndTemporalRedirect(t *testing.T) {
	perm := annotated(harness.IngressYAML("default", "perm", "moved.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		map[string]string{"permanent-redirect": "https://new.example.com/landing?from=old"})
	temp := annotated(harness.IngressYAML("default", "temp", "moved.example.com",
		harness.Path{Path: "/temp", Type: "Prefix", Service: "echo-b"}),
		map[string]string{"temporal-redirect": "http://temp.example.com/x", "temporal-redirect-code": "307"})
	e := newEnv(t, map[string]string{"perm.yaml": perm, "temp.yaml": temp})
	e.eventually("moved.example.com", "/anything", "the permanent redirect", status(301))
	if r := e.expect("moved.example.com", "/anything", 301, ""); r.Header.Get("Location") != "https://new.example.com/landing?from=old" {
		t.Fatalf("Location %q", r.Header.Get("Location"))
	}
	if r := e.expect("moved.example.com", "/temp/y", 307, ""); r.Header.Get("Location") != "http://temp.example.com/x" {
		t.Fatalf("Location %q", r.Header.Get("Location"))
	}
	// router.lua answers both redirects: the host has no server block.
	expectRouting(t, e.sy, map[string]bool{"moved.example.com": true})

	// A URL that would end the quoted string is refused, not written.
	e.write("perm.yaml", annotated(harness.IngressYAML("default", "perm", "moved.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		map[string]string{"permanent-redirect": `https://x.example.com/";return 200 "pwned`}))
	e.eventually("moved.example.com", "/anything", "the rejected redirect gone", status(404))
	e.expect("moved.example.com", "/temp/y", 307, "")
}

func TestForceSSLRedirectAndSSLRedirectOff(t *testing.T) {
	forced := annotated(harness.IngressYAML("default", "forced", "plain.example.com",
		harness.Path{Path: "/secure", Type: "Prefix", Service: "echo-b"}),
		map[string]string{"force-ssl-redirect": "true"})
	open := harness.IngressYAML("default", "open", "plain.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"})
	cert, key := harness.SelfSigned(t, "tls.example.com")
	tlsOff := annotated(harness.TLSIngressYAML("default", "tls", "tls.example.com", "echo-b", cert, key),
		map[string]string{"ssl-redirect": "false"})
	e := newEnv(t, map[string]string{"forced.yaml": forced, "open.yaml": open, "tls.yaml": tlsOff})
	httpsPort := strings.Split(e.sy.HTTPSAddr, ":")[1]

	// The host has no TLS, yet force-ssl-redirect sends /secure to HTTPS;
	// the trailing slash goes, as in ingress-nginx.
	e.eventually("plain.example.com", "/secure/", "the forced redirect", status(308))
	if r := e.expect("plain.example.com", "/secure/", 308, ""); r.Header.Get("Location") != "https://plain.example.com:"+httpsPort+"/secure" {
		t.Fatalf("Location %q", r.Header.Get("Location"))
	}
	e.expect("plain.example.com", "/", 200, "b-1")
	// ssl-redirect: "false" keeps plain HTTP on a TLS host.
	e.eventually("tls.example.com", "/", "plain HTTP on the TLS host", servedBy("b-1"))

	// preserve-trailing-slash keeps it.
	e.write("forced.yaml", annotated(harness.IngressYAML("default", "forced", "plain.example.com",
		harness.Path{Path: "/secure", Type: "Prefix", Service: "echo-b"}),
		map[string]string{"force-ssl-redirect": "true", "preserve-trailing-slash": "true"}))
	e.eventually("plain.example.com", "/secure/", "the redirect keeping the slash",
		location("https://plain.example.com:"+httpsPort+"/secure/"))
}

func TestFromToWWWRedirect(t *testing.T) {
	bare := annotated(harness.IngressYAML("default", "bare", "shop.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		map[string]string{"from-to-www-redirect": "true"})
	www := annotated(harness.IngressYAML("default", "www", "www.blog.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		map[string]string{"from-to-www-redirect": "true"})
	e := newEnv(t, map[string]string{"bare.yaml": bare, "www.yaml": www})
	port := strings.Split(e.sy.HTTPAddr, ":")[1]

	e.eventually("www.shop.example.com", "/a?b=1", "www to the bare host",
		location("http://shop.example.com:"+port+"/a?b=1"))
	e.expect("www.shop.example.com", "/a?b=1", 308, "")
	e.expect("shop.example.com", "/a", 200, "b-1")
	e.eventually("blog.example.com", "/", "the bare host to www", location("http://www.blog.example.com:"+port+"/"))
	e.expect("www.blog.example.com", "/", 200, "b-1")

	// An Ingress for www.shop.example.com itself wins over the redirect.
	e.write("www-shop.yaml", harness.IngressYAML("default", "www-shop", "www.shop.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.eventually("www.shop.example.com", "/", "the real www host", func(r harness.Response) bool {
		return r.Status == 200 && r.Echo != nil && r.Echo.Service == "echo-a"
	})
}

// TestRedirectConfigMapKeys: the ConfigMap's force-ssl-redirect applies to
// every location whose Ingress does not say otherwise, an Ingress's
// force-ssl-redirect: "false" keeps plain HTTP, and a path under
// no-tls-redirect-locations (ACME HTTP-01 challenges by default) is never
// redirected.
func TestRedirectConfigMapKeys(t *testing.T) {
	e := newBackends(t)
	e.write("configmap.yaml", configMapYAML(map[string]string{"force-ssl-redirect": "true"}))
	e.write("site.yaml", harness.IngressYAML("default", "site", "site.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"},
		harness.Path{Path: "/.well-known/acme-challenge", Type: "Prefix", Service: "echo-a"}))
	e.write("optout.yaml", annotated(harness.IngressYAML("default", "optout", "optout.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}), map[string]string{"force-ssl-redirect": "false"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	e.eventually("site.example.com", "/page", "the ConfigMap's force-ssl-redirect", status(308))
	e.eventually("site.example.com", "/.well-known/acme-challenge/token", "the ACME challenge over plain HTTP", servedBy("a-1"))
	e.eventually("optout.example.com", "/", `force-ssl-redirect: "false" over the ConfigMap's`, servedBy("b-1"))
}
