package bench

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/stages/renderer"
)

// annotatedRoute is one host of TestBenchOverheadAnnotations: an Ingress
// with the annotations a real cluster puts on its routes, and the Origin
// a browser would send to it.
type annotatedRoute struct {
	name, host, origin string
	annotations        map[string]string
}

// annotatedRoutes are the hosts the annotation overhead is measured on,
// next to the fixture's bare host. The proxy mix (issue 13) is the
// annotations found most on public Ingresses; the edge mix (issue 14) is
// a source range and CORS, answered for an allowed Origin.
var annotatedRoutes = []annotatedRoute{
	{name: "proxy mix", host: "proxy.bench.example.com", annotations: map[string]string{
		"nginx.ingress.kubernetes.io/proxy-body-size":           "64m",
		"nginx.ingress.kubernetes.io/proxy-read-timeout":        "3600",
		"nginx.ingress.kubernetes.io/proxy-send-timeout":        "3600",
		"nginx.ingress.kubernetes.io/proxy-connect-timeout":     "10",
		"nginx.ingress.kubernetes.io/proxy-buffer-size":         "16k",
		"nginx.ingress.kubernetes.io/proxy-next-upstream-tries": "3",
		"nginx.ingress.kubernetes.io/upstream-vhost":            "internal.example.com",
		"nginx.ingress.kubernetes.io/x-forwarded-prefix":        "/app",
	}},
	{name: "source range + CORS", host: "edge.bench.example.com", origin: "https://app.example.com", annotations: map[string]string{
		"nginx.ingress.kubernetes.io/whitelist-source-range": "10.0.0.0/8,127.0.0.0/8",
		"nginx.ingress.kubernetes.io/enable-cors":            "true",
		"nginx.ingress.kubernetes.io/cors-allow-origin":      "https://app.example.com,https://*.example.org",
	}},
}

// TestBenchOverheadAnnotations compares, in one run, Switchyard with plain
// NGINX on routes that carry annotations, host by host: the plain copy is
// Switchyard's own rendered configuration with the Lua taken out (see
// TestBenchOverhead), so it keeps every directive an annotation writes
// (timeouts, buffers, allow/deny, headers) and the ratio is what the Lua
// costs on that route. CORS is Lua in Switchyard: the plain copy adds the
// same CORS headers with add_header, as one would by hand (handWrittenCORS).
// Each route is also measured through a second Switchyard with Lua routing
// (the default), where a host whose annotations router.lua applies (the
// source range and CORS) has no server block.
func TestBenchOverheadAnnotations(t *testing.T) {
	requireBench(t)
	nginx, f, sy := startOverheadFixture(t)
	for _, r := range annotatedRoutes {
		harness.WriteFile(t, filepath.Join(f.dir, "ingress-"+r.host+".yaml"),
			harness.AnnotatedIngressYAML("default", strings.Split(r.host, ".")[0], r.host, r.annotations,
				harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	}
	for _, r := range annotatedRoutes {
		waitServed(t, sy, r.host, "", 60*time.Second)
		checkAnnotatedRoute(t, sy.HTTPAddr, r)
	}
	plain := startScratch(t, nginx, sy, "plain", plainConfig(f.portA, f.portB))
	lua := harness.StartSwitchyard(t, f.dir, "--log-level", "warn", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		"--lua-routing=true")
	routes := append([]annotatedRoute{{name: "no annotations", host: f.host}}, annotatedRoutes...)
	var targets []benchTarget
	for _, r := range routes {
		waitScratch(t, plain, r.host)
		waitServed(t, lua, r.host, "", 60*time.Second)
		checkAnnotatedRoute(t, lua.HTTPAddr, r)
		luaName := "switchyard Lua-routed, " + r.name
		if _, err := os.Stat(filepath.Join(lua.ConfDir(), renderer.ServerFile(r.host))); err == nil {
			luaName = "switchyard Lua, server block, " + r.name
		}
		targets = append(targets,
			benchTarget{name: "switchyard, " + r.name, addr: sy.HTTPAddr, master: sy.MasterPID(t), host: r.host, origin: r.origin},
			benchTarget{name: luaName, addr: lua.HTTPAddr, master: lua.MasterPID(t), host: r.host, origin: r.origin},
			benchTarget{name: "plain NGINX, " + r.name, addr: plain.httpAddr, master: plain.master, host: r.host, origin: r.origin})
	}
	const rounds = 3
	per := 4 * time.Second
	runs := alternate(targets, f.host, rounds, per)
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\noverhead with annotations: %d keep-alive clients, %d alternating rounds of %s each\n",
		strings.Repeat("=", 100), overheadClients, rounds, per)
	for i, r := range runs {
		fmt.Fprintf(&rep, "%-44s %s\n", targets[i].name, r)
	}
	for i, r := range routes {
		syRun, luaRun, plainRun := runs[3*i], runs[3*i+1], runs[3*i+2]
		throughput := syRun.rps() / plainRun.rps()
		fmt.Fprintf(&rep, "%-22s throughput ratio switchyard / plain: %.2f (target >= 0.95: %s; by round: %s); NGINX CPU per request plain / switchyard: %.2f\n",
			r.name, throughput, met(throughput >= 0.95), roundRatios(syRun, plainRun), ratio(plainRun.cpuPerRequest(), syRun.cpuPerRequest()))
		fmt.Fprintf(&rep, "%-22s throughput ratio Lua routing / plain: %.2f (by round: %s); NGINX CPU per request plain / Lua routing: %.2f\n",
			"", luaRun.rps()/plainRun.rps(), roundRatios(luaRun, plainRun), ratio(plainRun.cpuPerRequest(), luaRun.cpuPerRequest()))
	}
	t.Log(rep.String())
	expectNoFailures(t, targets, runs)
}

// checkAnnotatedRoute makes sure the measured route does what its
// annotations ask before it is measured: the backend sees upstream-vhost
// and the prefix, and an allowed Origin gets its CORS header.
func checkAnnotatedRoute(t *testing.T, addr string, r annotatedRoute) {
	t.Helper()
	headers := map[string]string{}
	if r.origin != "" {
		headers["Origin"] = r.origin
	}
	// On new connections, as the benchmark's clients open them: for a few
	// milliseconds after a reload an old worker may still accept one, and
	// it does not know a host added by that reload.
	var resp harness.Response
	var err error
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err = harness.DoWithHeaders(harness.NewClient(), http.MethodGet, "http://"+addr+"/", r.host, headers)
		if (err == nil && resp.Status == http.StatusOK && resp.Echo != nil) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil || resp.Status != http.StatusOK || resp.Echo == nil {
		t.Fatalf("%s: %+v, %v", r.name, resp, err)
	}
	if vhost := r.annotations["nginx.ingress.kubernetes.io/upstream-vhost"]; vhost != "" && resp.Echo.Host != vhost {
		t.Errorf("%s: backend saw Host %q, want upstream-vhost %q", r.name, resp.Echo.Host, vhost)
	}
	if r.origin != "" && resp.Header.Get("Access-Control-Allow-Origin") != r.origin {
		t.Errorf("%s: Access-Control-Allow-Origin %q, want %q", r.name, resp.Header.Get("Access-Control-Allow-Origin"), r.origin)
	}
}
