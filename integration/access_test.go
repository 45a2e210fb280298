package integration

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
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

// rootIngress is Ingress default/name for name.example.com, "/" to echo-a,
// with the ingress-nginx annotations a (named without their prefix).
func rootIngress(name string, a map[string]string) string {
	return annotated(harness.IngressYAML("default", name, name+".example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}), a)
}

// TestSourceRangesThroughNginx: allowlist-source-range (and its alias
// whitelist-source-range) lets only the listed clients through, everyone
// else gets 403; denylist-source-range wins over the allowlist; a bad list
// rejects the Ingress while its neighbour stays served.
func TestSourceRangesThroughNginx(t *testing.T) {
	ing := rootIngress
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
	expectRouting(t, e.sy, map[string]bool{"only-one.example.com": true, "legacy.example.com": true,
		"mixed.example.com": true, "open.example.com": true})
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
	// Auth keeps the server blocks.
	expectRouting(t, e.sy, map[string]bool{"any.example.com": false, "all.example.com": false})
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

// TestGlobalAccessThroughNginx: the ConfigMap's whitelist-source-range and
// denylist-source-range apply to every Ingress without an annotation of
// its own, and an Ingress's own list replaces the global one of its kind
// only; block-cidrs wins over every allowlist; block-user-agents (exact
// and regex) and block-referers answer 403; an unreadable global list
// fails closed where it applies and is reported naming the key.
func TestGlobalAccessThroughNginx(t *testing.T) {
	ing := rootIngress
	settings := map[string]string{
		"whitelist-source-range": "127.0.0.0/29",
		"denylist-source-range":  "127.0.0.2",
		"block-cidrs":            "127.0.0.3",
		"block-user-agents":      "BadBot/1.0, ~*(sqlmap|nikto)",
		"block-referers":         `~*^https?://spam\.example/`,
	}
	e := newBackends(t)
	e.write("configmap.yaml", configMapYAML(settings))
	e.write("ingresses.yaml", strings.Join([]string{
		ing("global", nil),
		ing("own-deny", map[string]string{"denylist-source-range": "127.0.0.1"}),
		ing("own-allow", map[string]string{"allowlist-source-range": "127.0.0.9"}),
	}, "---\n"))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	e.eventually("global.example.com", "/", "the global allowlist to let 127.0.0.1 in", servedBy("a-1"))
	get := func(src, host string, headers map[string]string) int {
		t.Helper()
		r, err := harness.DoWithHeaders(clientFrom(src), http.MethodGet, "http://"+e.sy.HTTPAddr+"/", host, headers)
		if err != nil {
			t.Fatalf("%s from %s: %v", host, src, err)
		}
		return r.Status
	}
	// expect polls: a reload's old workers may still answer for a moment.
	expect := func(src, host string, want int) {
		t.Helper()
		harness.WaitFor(t, changeTimeout, fmt.Sprintf("%s from %s to answer %d", host, src, want), func() error {
			if got := get(src, host, nil); got != want {
				return fmt.Errorf("got %d", got)
			}
			return nil
		})
	}
	expect("127.0.0.9", "global.example.com", 403) // the ConfigMap is in force
	routed := map[string]bool{"global.example.com": true, "own-deny.example.com": true, "own-allow.example.com": true}
	expectRouting(t, e.sy, routed)
	for _, c := range []struct {
		src, host string
		want      int
	}{
		{"127.0.0.1", "global.example.com", 200},
		{"127.0.0.2", "global.example.com", 403}, // denylist-source-range
		{"127.0.0.3", "global.example.com", 403}, // block-cidrs
		{"127.0.0.9", "global.example.com", 403}, // not in whitelist-source-range
		// The Ingress's denylist replaces the global one; the global
		// allowlist still holds.
		{"127.0.0.2", "own-deny.example.com", 200},
		{"127.0.0.1", "own-deny.example.com", 403},
		{"127.0.0.9", "own-deny.example.com", 403},
		{"127.0.0.3", "own-deny.example.com", 403},
		// The Ingress's allowlist replaces the global one; the global
		// denylist and block-cidrs still hold.
		{"127.0.0.9", "own-allow.example.com", 200},
		{"127.0.0.1", "own-allow.example.com", 403},
	} {
		if got := get(c.src, c.host, nil); got != c.want {
			t.Errorf("%s from %s: %d, want %d", c.host, c.src, got, c.want)
		}
	}
	for _, c := range []struct {
		header, value string
		want          int
	}{
		{"User-Agent", "BadBot/1.0", 403},
		{"User-Agent", "Mozilla/5.0 SQLMap/1.7", 403},
		{"User-Agent", "BadBot/1.0 (not exactly)", 200},
		{"User-Agent", "curl/8.0", 200},
		{"Referer", "https://SPAM.example/page", 403},
		{"Referer", "https://ok.example/spam.example/", 200},
	} {
		if got := get("127.0.0.1", "global.example.com", map[string]string{c.header: c.value}); got != c.want {
			t.Errorf("%s %q: %d, want %d", c.header, c.value, got, c.want)
		}
	}
	// use-forwarded-headers is off: a client cannot claim another address.
	if got := get("127.0.0.9", "global.example.com", map[string]string{"X-Forwarded-For": "127.0.0.1", "X-Real-IP": "127.0.0.1"}); got != 403 {
		t.Errorf("a spoofed X-Forwarded-For got in: %d, want 403", got)
	}
	if got := get("127.0.0.9", "own-allow.example.com", map[string]string{"User-Agent": "nikto"}); got != 403 {
		t.Errorf("block-user-agents on an Ingress with its own allowlist: %d, want 403", got)
	}

	// An unreadable whitelist: the Ingresses it applies to answer 403
	// rather than serve everyone; the one with its own allowlist is served.
	settings["whitelist-source-range"] = "127.0.0.0/29, 127.0.0.300"
	e.write("configmap.yaml", configMapYAML(settings))
	e.eventually("global.example.com", "/", "the unreadable whitelist to close the Ingress without its own", status(403))
	expect("127.0.0.2", "own-deny.example.com", 403)  // the unreadable whitelist applies
	expect("127.0.0.9", "own-allow.example.com", 200) // its own allowlist replaces it
	if out := e.sy.Output.String(); !strings.Contains(out, "whitelist-source-range") || !strings.Contains(out, "127.0.0.300") {
		t.Errorf("the unreadable whitelist is not reported:\n%s", truncate([]byte(out)))
	}
	expectRouting(t, e.sy, routed) // closed in Lua, as the server block would be

	// An injection through a block list is refused as a whole: the key
	// fails closed on every Ingress, and nothing of it reaches NGINX.
	settings["whitelist-source-range"] = "127.0.0.0/29"
	settings["block-user-agents"] = `x" 1; } server { listen 127.0.0.1:1; } map $a $b { "y`
	e.write("configmap.yaml", configMapYAML(settings))
	expect("127.0.0.9", "own-allow.example.com", 403)
	if out := e.sy.Output.String(); !strings.Contains(out, "data.block-user-agents") {
		t.Errorf("the unreadable block-user-agents is not reported:\n%s", truncate([]byte(out)))
	}
	checkNotRendered(t, e.sy.StateDir, "listen 127.0.0.1:1;")
}

// checkNotRendered fails when a configuration file below dir holds text.
func checkNotRendered(t *testing.T, dir, text string) {
	t.Helper()
	confs := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() || !strings.HasSuffix(path, ".conf") {
			return err
		}
		confs++
		data, err := os.ReadFile(path)
		if err == nil && strings.Contains(string(data), text) {
			t.Errorf("%s holds %q", path, text)
		}
		return nil
	})
	if err != nil || confs == 0 {
		t.Fatalf("no configuration files below %s: %v", dir, err)
	}
}

// TestRealIPThroughNginx: enable-real-ip with forwarded-for-header takes
// the client address from that header, but only from a peer in
// proxy-real-ip-cidr, and leaves the scheme alone (X-Forwarded-Proto is
// not trusted without use-forwarded-headers); the allowlist sees it.
func TestRealIPThroughNginx(t *testing.T) {
	e := newBackends(t)
	e.write("configmap.yaml", configMapYAML(map[string]string{
		"enable-real-ip": "true", "forwarded-for-header": "X-Client-IP", "proxy-real-ip-cidr": "127.0.0.1/32"}))
	e.write("ingress.yaml", harness.AnnotatedIngressYAML("default", "office", "office.example.com",
		map[string]string{upstreamPrefix + "allowlist-source-range": "10.1.2.3"}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	trusted := map[string]string{"X-Client-IP": "10.1.2.3", "X-Forwarded-Proto": "https"}
	r := e.eventuallyWithHeaders("office.example.com", "/", trusted, "the address from X-Client-IP to pass the allowlist", servedBy("a-1"))
	expectRouting(t, e.sy, map[string]bool{"office.example.com": true})
	if got := first(r.Echo.Headers, "X-Real-Ip"); got != "10.1.2.3" {
		t.Errorf("X-Real-IP upstream %q, want 10.1.2.3", got)
	}
	if got := first(r.Echo.Headers, "X-Forwarded-Proto"); got != "http" {
		t.Errorf("X-Forwarded-Proto upstream %q: enable-real-ip must not trust the client's scheme", got)
	}
	for _, c := range []struct {
		what, src, client string
		want              int
	}{
		{"an address not on the allowlist", "127.0.0.1", "10.9.9.9", 403},
		{"a header from an untrusted peer", "127.0.0.2", "10.1.2.3", 403},
	} {
		r, err := harness.DoWithHeaders(clientFrom(c.src), http.MethodGet, "http://"+e.sy.HTTPAddr+"/", "office.example.com", map[string]string{"X-Client-IP": c.client})
		if err != nil || r.Status != c.want {
			t.Errorf("%s: %d (%v), want %d", c.what, r.Status, err, c.want)
		}
	}
}

// TestLuaRoutedSourceRanges: hosts with source ranges (an Ingress's own
// allow and deny lists, the ConfigMap's whitelist, denylist and
// block-cidrs; IPv4, IPv6 and IPv4-mapped clients) are Lua-routed and
// answer as their server blocks do. The client address is the one the
// realip module settled (use-forwarded-headers, proxy-real-ip-cidr): a
// trusted peer's X-Forwarded-For counts, an untrusted peer's does not.
// A permanent-redirect answers before the source ranges are checked, as
// NGINX's rewrite phase comes before its access phase. Run with both
// routings (Makefile SERVER_BLOCK_TESTS).
func TestLuaRoutedSourceRanges(t *testing.T) {
	ing := rootIngress
	e := newBackends(t)
	e.write("configmap.yaml", configMapYAML(map[string]string{
		"use-forwarded-headers":  "true",
		"proxy-real-ip-cidr":     "127.0.0.1/32",
		"whitelist-source-range": "10.0.0.0/8, 2001:db8::/32, 127.0.0.1/32",
		"denylist-source-range":  "10.1.2.3, 2001:db8:0:bad::/64",
		"block-cidrs":            "192.0.2.0/24, 2001:db8:dead::/48",
	}))
	e.write("office.yaml", ing("office", map[string]string{"allowlist-source-range": "2001:db8:1::/48, 10.2.0.0/16, 127.0.0.1",
		"denylist-source-range": "2001:db8:1:2::/64, 10.2.3.0/24"}))
	e.write("ingresses.yaml", strings.Join([]string{
		ing("global", nil),
		ing("any", map[string]string{"allowlist-source-range": "10.3.0.0/16, 127.0.0.1", "satisfy": "any"}),
		ing("moved", map[string]string{"allowlist-source-range": "10.9.0.0/16", "permanent-redirect": "https://new.example.com/"}),
	}, "---\n"))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	e.eventually("office.example.com", "/", "the office's own allowlist to let 127.0.0.1 in", servedBy("a-1"))
	expectRouting(t, e.sy, map[string]bool{"global.example.com": true, "office.example.com": true,
		"any.example.com": true, "moved.example.com": true})
	get := func(peer, host, client string) int {
		t.Helper()
		r, err := harness.DoWithHeaders(clientFrom(peer), http.MethodGet, "http://"+e.sy.HTTPAddr+"/", host+".example.com",
			map[string]string{"X-Forwarded-For": client})
		if err != nil {
			t.Fatalf("%s from %s as %s: %v", host, peer, client, err)
		}
		return r.Status
	}
	// expect polls: after a reload, the old workers may answer for a moment.
	expect := func(peer, host, client string, want int) {
		t.Helper()
		harness.WaitFor(t, changeTimeout, fmt.Sprintf("%s as %s from %s to answer %d", host, client, peer, want), func() error {
			if got := get(peer, host, client); got != want {
				return fmt.Errorf("got %d", got)
			}
			return nil
		})
	}
	for _, c := range []struct {
		host, client string
		want         int
	}{
		{"global", "10.1.2.4", 200}, {"global", "10.1.2.3", 403}, {"global", "11.0.0.1", 403},
		{"global", "192.0.2.7", 403}, {"global", "2001:db8::1", 200}, {"global", "2001:db8:0:bad::1", 403},
		{"global", "2001:db8:dead::1", 403}, {"global", "2001:db9::1", 403}, {"global", "::ffff:10.1.2.4", 200},
		{"global", "::ffff:10.1.2.3", 403}, {"global", "::ffff:192.0.2.7", 403},
		// The own lists replace the ConfigMap's of their kind; block-cidrs stays.
		{"office", "2001:db8:1:1::1", 200}, {"office", "2001:db8:1:2::1", 403}, {"office", "2001:db8::1", 403},
		{"office", "10.2.4.1", 200}, {"office", "10.2.3.1", 403}, {"office", "10.1.2.3", 403},
		{"office", "2001:db8:0:bad::1", 403}, {"office", "192.0.2.1", 403}, {"office", "2001:db8:dead::1", 403},
		// satisfy any without auth: the lines decide alone.
		{"any", "10.3.0.1", 200}, {"any", "10.4.0.1", 403}, {"any", "2001:db8::1", 403},
		// The redirect comes first, for everyone.
		{"moved", "10.9.0.1", 301}, {"moved", "11.0.0.1", 301},
	} {
		expect("127.0.0.1", c.host, c.client, c.want)
	}
	// An untrusted peer cannot claim an address: 127.0.0.2 is on no list.
	for _, host := range []string{"global", "office", "any"} {
		expect("127.0.0.2", host, "10.2.4.1, 10.3.0.1", 403)
	}
	// A changed allowlist applies; with Lua routing, without a reload.
	workers := stableWorkers(t, e.sy)
	e.write("office.yaml", ing("office", map[string]string{"allowlist-source-range": "10.7.0.0/16, 127.0.0.1"}))
	expect("127.0.0.1", "office", "10.7.0.1", 200)
	expect("127.0.0.1", "office", "10.2.4.1", 403)
	if os.Getenv(harness.RoutingEnv) != "server-blocks" {
		expectNoReload(t, e.sy, workers)
	}
}
