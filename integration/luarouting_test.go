package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/stages/renderer"
)

// Lua routing (issue 12): the same manifests served once with a server
// block per host and once with the hosts that need no directive of their
// own routed in Lua must answer every request the same way.

// routingManifests are hosts that exercise NGINX's location matching and
// the per-location features router.lua applies, plus hosts that must keep
// their server blocks.
func routingManifests() map[string]string {
	return map[string]string{
		"paths-one.yaml": harness.IngressYAML("default", "paths-one", "paths.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"},
			harness.Path{Path: "/api", Type: "Exact", Service: "echo-b"}),
		"paths-two.yaml": harness.IngressYAML("default", "paths-two", "paths.example.com",
			harness.Path{Path: "/api", Type: "Prefix", Service: "echo-a"},
			harness.Path{Path: "/api/v2/", Type: "Prefix", Service: "echo-b"},
			harness.Path{Path: "/files/", Type: "Exact", Service: "echo-b"}),
		"regex.yaml": annotated(harness.IngressYAML("default", "regex", "regex.example.com",
			harness.Path{Path: "/item/[0-9]+$", Type: "ImplementationSpecific", Service: "echo-b"},
			harness.Path{Path: "/Static", Type: "ImplementationSpecific", Service: "echo-b"}),
			map[string]string{"use-regex": "true"}),
		"regex-root.yaml": harness.IngressYAML("default", "regex-root", "regex.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"},
			harness.Path{Path: "/item/7/edit", Type: "Prefix", Service: "echo-a"}),
		"exact-only.yaml": harness.IngressYAML("default", "exact-only", "exact.example.com",
			harness.Path{Path: "/only", Type: "Exact", Service: "echo-a"}),
		"force.yaml": annotated(harness.IngressYAML("default", "force", "force.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
			map[string]string{"force-ssl-redirect": "true"}),
		"approot.yaml": annotated(harness.IngressYAML("default", "approot", "approot.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
			map[string]string{"app-root": "/app", "x-forwarded-prefix": "/pre"}),
		"body.yaml": annotated(harness.IngressYAML("default", "body", "body.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
			map[string]string{"proxy-body-size": "1k"}),
		"moved.yaml": annotated(harness.IngressYAML("default", "moved", "moved.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
			map[string]string{"permanent-redirect": "https://new.example.com/landing?from=old", "proxy-body-size": "1k"}),
		"moved-temp.yaml": annotated(harness.IngressYAML("default", "moved-temp", "moved.example.com",
			harness.Path{Path: "/t", Type: "Exact", Service: "echo-a"}),
			map[string]string{"temporal-redirect": "http://tmp.example.com:8080/x", "temporal-redirect-code": "308"}),
		"rewrite.yaml": annotated(harness.IngressYAML("default", "rewrite", "rewrite.example.com",
			harness.Path{Path: "/something(/|$)(.*)", Type: "ImplementationSpecific", Service: "echo-a"}),
			map[string]string{"rewrite-target": "/$2", "x-forwarded-prefix": "/something"}),
		"rewrite-more.yaml": annotated(harness.IngressYAML("default", "rewrite-more", "rewrite.example.com",
			harness.Path{Path: "/a/(x|y)?(/.*)?", Type: "ImplementationSpecific", Service: "echo-b"},
			harness.Path{Path: "/enc/(.*)", Type: "ImplementationSpecific", Service: "echo-b"}),
			map[string]string{"rewrite-target": "/b/$1-$2-$3/$9", "use-regex": "true"}),
		"wild.yaml": harness.IngressYAML("default", "wild", "*.wild.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"under-wild.yaml": harness.IngressYAML("default", "under-wild", "b.wild.example.com",
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
		"no-host.yaml": harness.IngressYAML("default", "no-host", "",
			harness.Path{Path: "/catch", Type: "Prefix", Service: "echo-b"}),
	}
}

// routingRequests are the requests both paths must answer alike.
var routingRequests = []struct{ host, path string }{
	{"paths.example.com", "/"}, {"paths.example.com", "/api"}, {"paths.example.com", "/api/"},
	{"paths.example.com", "/api/x"}, {"paths.example.com", "/api/v2"}, {"paths.example.com", "/api/v2/x"},
	{"paths.example.com", "/api/v2x"}, {"paths.example.com", "/apix"}, {"paths.example.com", "/files/"},
	{"paths.example.com", "/files"}, {"paths.example.com", "/files/x"}, {"PATHS.Example.com", "/api"},
	{"paths.example.com", "/a/../api"}, {"paths.example.com", "//api"},
	{"regex.example.com", "/"}, {"regex.example.com", "/item/12"}, {"regex.example.com", "/item/12/x"},
	{"regex.example.com", "/ITEM/12"}, {"regex.example.com", "/item/7/edit"}, {"regex.example.com", "/static/x"},
	{"regex.example.com", "/Static"}, {"regex.example.com", "/other"},
	{"exact.example.com", "/only"}, {"exact.example.com", "/"}, {"exact.example.com", "/only/x"},
	{"force.example.com", "/x/?q=1"}, {"force.example.com", "/"},
	{"approot.example.com", "/"}, {"approot.example.com", "/x"},
	{"body.example.com", "/"},
	{"moved.example.com", "/"}, {"moved.example.com", "/x?y=1"}, {"moved.example.com", "/t"}, {"moved.example.com", "/t/"},
	{"rewrite.example.com", "/something"}, {"rewrite.example.com", "/something/"}, {"rewrite.example.com", "/SomeThing/x/y?q=1&r=%20"},
	{"rewrite.example.com", "/somethingelse"}, {"rewrite.example.com", "/a/x"}, {"rewrite.example.com", "/a/"},
	{"rewrite.example.com", "/a/y/z?k=v"}, {"rewrite.example.com", "/A/Xq"}, {"rewrite.example.com", "/enc/a%20b%2Fc+d?x=%2F+"},
	{"rewrite.example.com", "/enc/x%0Ay"}, {"rewrite.example.com", "/enc/%E2%82%AC/../up"}, {"rewrite.example.com", "/enc/"},
	{"a.wild.example.com", "/"}, {"b.wild.example.com", "/"}, {"wild.example.com", "/"},
	{"unknown.example.com", "/catch/x"}, {"unknown.example.com", "/"},
}

// answer is what a user sees of a response: status, backend pod,
// the path and query the backend got, redirect target (with sy's HTTPS
// port as ":HTTPS") and the prefix header the backend got.
func answer(r harness.Response, sy *harness.Switchyard) string {
	pod, prefix, path := "", "", ""
	if r.Echo != nil {
		pod, path = r.Echo.Pod, r.Echo.Path
		if v := r.Echo.Headers["X-Forwarded-Prefix"]; len(v) > 0 {
			prefix = v[0]
		}
	}
	_, port, _ := strings.Cut(sy.HTTPSAddr, ":")
	loc := strings.ReplaceAll(r.Header.Get("Location"), ":"+port, ":HTTPS")
	return fmt.Sprintf("%d pod=%q path=%q location=%q prefix=%q", r.Status, pod, path, loc, prefix)
}

func TestLuaRoutingAnswersAsServerBlocks(t *testing.T) {
	e := newBackends(t)
	for name, content := range routingManifests() {
		e.write(name, content)
	}
	blocks := harness.StartSwitchyard(t, e.dir, "--lua-routing=false")
	lua := harness.StartSwitchyard(t, e.dir, "--lua-routing=true")
	for _, sy := range []*harness.Switchyard{blocks, lua} {
		harness.WaitFor(t, changeTimeout, "every host served", func() error {
			for _, host := range []string{"paths.example.com", "regex.example.com", "exact.example.com", "approot.example.com", "body.example.com", "b.wild.example.com"} {
				path := "/"
				if host == "exact.example.com" {
					path = "/only"
				}
				if r, err := sy.Get(host, path); err != nil || r.Status == 404 || r.Status == 503 {
					return fmt.Errorf("%s%s: %v %d", host, path, err, r.Status)
				}
			}
			return nil
		})
	}
	for _, req := range routingRequests {
		want, err := blocks.Get(req.host, req.path)
		if err != nil {
			t.Fatalf("server blocks %s%s: %v", req.host, req.path, err)
		}
		got, err := lua.Get(req.host, req.path)
		if err != nil {
			t.Fatalf("lua routing %s%s: %v", req.host, req.path, err)
		}
		// The redirects name each instance's own HTTPS port.
		if answer(got, lua) != answer(want, blocks) {
			t.Errorf("%s%s: lua routing answers %s, server blocks %s", req.host, req.path, answer(got, lua), answer(want, blocks))
		}
	}
	// The Lua path was taken: the plain hosts have no server block, the
	// ones that need directives (or a wildcard above them) still do; a
	// wildcard is routed too.
	for host, wantBlock := range map[string]bool{
		"paths.example.com": false, "regex.example.com": false, "exact.example.com": false,
		"force.example.com": false, "approot.example.com": false, "moved.example.com": false, "rewrite.example.com": false,
		"body.example.com": false, "*.wild.example.com": false, "b.wild.example.com": true,
	} {
		_, err := os.Stat(filepath.Join(lua.ConfDir(), renderer.ServerFile(host)))
		if hasBlock := err == nil; hasBlock != wantBlock {
			t.Errorf("%s: server block %v with lua routing, want %v", host, hasBlock, wantBlock)
		}
	}
}

// A new plain Ingress, a change of it and its removal are served without
// a reload: the NGINX workers stay the same.
func TestLuaRoutedHostNeedsNoReload(t *testing.T) {
	e := newBackends(t)
	e.write("first.yaml", harness.IngressYAML("default", "first", "first.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--lua-routing=true")
	e.eventually("first.example.com", "/", "the first host", servedBy("a-1"))
	workers := stableWorkers(t, e.sy)
	e.write("new.yaml", harness.IngressYAML("default", "new", "new.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	e.eventually("new.example.com", "/", "the new host", servedBy("b-1"))
	e.write("new.yaml", harness.IngressYAML("default", "new", "new.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"},
		harness.Path{Path: "/b", Type: "Exact", Service: "echo-b"}))
	e.eventually("new.example.com", "/", "the changed host", servedBy("a-1"))
	e.expect("new.example.com", "/b", 200, "b-1")
	if err := os.Remove(filepath.Join(e.dir, "new.yaml")); err != nil {
		t.Fatal(err)
	}
	e.eventually("new.example.com", "/", "the removed host", func(r harness.Response) bool { return r.Status == 404 })
	expectNoReload(t, e.sy, workers)
}

// stableWorkers are sy's NGINX workers once the reloads before have
// settled: they must be stable before they can be compared.
func stableWorkers(t *testing.T, sy *harness.Switchyard) []int {
	t.Helper()
	var workers []int
	harness.WaitFor(t, changeTimeout, "stable workers", func() error {
		before := slices.Sorted(slices.Values(sy.WorkerPIDs(t)))
		time.Sleep(500 * time.Millisecond)
		workers = slices.Sorted(slices.Values(sy.WorkerPIDs(t)))
		if !slices.Equal(before, workers) {
			return fmt.Errorf("workers changing: %v then %v", before, workers)
		}
		return nil
	})
	return workers
}

// expectNoReload fails when sy's workers are no longer workers
// (stableWorkers): NGINX reloaded.
func expectNoReload(t *testing.T, sy *harness.Switchyard, workers []int) {
	t.Helper()
	if now := slices.Sorted(slices.Values(sy.WorkerPIDs(t))); !slices.Equal(now, workers) {
		t.Errorf("NGINX reloaded for a Lua-routed host: workers %v, then %v", workers, now)
	}
}

// expectRouting checks which hosts sy routes in Lua: those in lua have no
// server block, the others have one. With the suite run on server blocks
// (SWITCHYARD_TEST_ROUTING=server-blocks) every host has its block.
func expectRouting(t *testing.T, sy *harness.Switchyard, lua map[string]bool) {
	t.Helper()
	blocksOnly := os.Getenv(harness.RoutingEnv) == "server-blocks"
	for host, routed := range lua {
		_, err := os.Stat(filepath.Join(sy.ConfDir(), renderer.ServerFile(host)))
		if hasBlock, wantBlock := err == nil, blocksOnly || !routed; hasBlock != wantBlock {
			t.Errorf("%s: server block %v, want %v (routing %q)", host, hasBlock, wantBlock, os.Getenv(harness.RoutingEnv))
		}
	}
}
