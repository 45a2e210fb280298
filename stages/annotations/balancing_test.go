package annotations

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/builtin/balancing"
	"switchyard.dev/switchyard/plugins/builtin/canary"
)

// builtinAnnotator is an Annotator whose plugins are the given built-in
// ones, called in-process.
func builtinAnnotator(t testing.TB, ps ...plugins.Plugin) *Annotator {
	t.Helper()
	owners := map[string]*ownedKey{}
	byHosted := map[*hosted]plugins.Plugin{}
	for _, plugin := range ps {
		p := &hosted{desc: plugin.Describe(), keys: map[string]*ownedKey{}}
		byHosted[p] = plugin
		for _, spec := range p.desc.Annotations {
			k := &ownedKey{plugin: p, spec: spec, full: bus.DefaultAnnotationsPrefix + "/" + spec.Key,
				pattern: regexp.MustCompile(`^(?:` + spec.Pattern + `)$`)}
			owners[k.full], p.keys[k.full] = k, k
		}
	}
	call := func(ctx context.Context, p *hosted, batch []plugins.Ingress) ([]plugins.Result, error) {
		return byHosted[p].Apply(ctx, batch)
	}
	return NewAnnotator(owners, bus.DefaultAnnotationsPrefix, call)
}

func ingressJSON(t *testing.T, namespace, name string, ann map[string]string) []byte {
	return agedIngressJSON(t, namespace, name, 0, ann)
}

// agedIngressJSON is ingressJSON of an Ingress created at Unix second
// created.
func agedIngressJSON(t *testing.T, namespace, name string, created int64, ann map[string]string) []byte {
	full := map[string]string{}
	for k, v := range ann {
		full[bus.DefaultAnnotationsPrefix+"/"+k] = v
	}
	// Canary is the translator's decision, which this stands in for.
	canary, _ := strconv.ParseBool(ann["canary"])
	return mustJSON(t, &bus.IngressInfo{Namespace: namespace, Name: name, Created: created, Annotations: full, Canary: canary})
}

func updateBalancing(t *testing.T, a *Annotator, changed map[string][]byte) bus.Output {
	t.Helper()
	out, err := a.Update(context.Background(), changed)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func hashBy(b *bus.Backend) string {
	if b.UpstreamHashByConfig == nil {
		return ""
	}
	return b.UpstreamHashByConfig.UpstreamHashBy
}

// TestBalancingBackends: two Ingresses on one backend, the older wins and
// the other is warned; a change is a backend push without a
// server; removing the annotations restores the default.
func TestBalancingBackends(t *testing.T) {
	a := builtinAnnotator(t, balancing.New(), canary.New())
	serverKey := bus.Key(bus.KindServer, "shop.example.com")
	server := &bus.Server{Hostname: "shop.example.com", Locations: []bus.Location{
		{Path: "/a", PathType: bus.PathPrefix, Backend: "shop-web-80", Ingress: "shop/a"},
		{Path: "/b", PathType: bus.PathPrefix, Backend: "shop-web-80", Ingress: "shop/b"},
		{Path: "/c", PathType: bus.PathPrefix, Backend: "shop-api-80", Ingress: "shop/b"},
	}}
	out := updateBalancing(t, a, map[string][]byte{
		serverKey:                                 mustJSON(t, server),
		bus.Key(bus.KindBackend, "shop-web-80"):   backendJSON(t, "shop-web-80"),
		bus.Key(bus.KindBackend, "shop-api-80"):   backendJSON(t, "shop-api-80"),
		bus.Key(bus.KindBackend, "shop-other-80"): backendJSON(t, "shop-other-80"),
		bus.Key(bus.KindIngress, "shop", "a"):     agedIngressJSON(t, "shop", "a", 100, map[string]string{"upstream-hash-by": "$request_uri"}),
		bus.Key(bus.KindIngress, "shop", "b"):     agedIngressJSON(t, "shop", "b", 200, map[string]string{"load-balance": "ewma"}),
	})
	if web := decodeBackend(t, out, "shop-web-80"); hashBy(web) != "$request_uri" || web.LoadBalance != "" {
		t.Fatalf("shared backend: want shop/a's hash, got %+v", web)
	}
	if api := decodeBackend(t, out, "shop-api-80"); api.LoadBalance != "ewma" || api.UpstreamHashByConfig != nil {
		t.Fatalf("shop/b's own backend: %+v", api)
	}
	if other := decodeBackend(t, out, "shop-other-80"); other.LoadBalance != "" || other.UpstreamHashByConfig != nil {
		t.Fatalf("unused backend: %+v", other)
	}
	if info := infoOf(t, out, "shop", "a"); len(info.Problems) != 0 {
		t.Fatalf("the winner is warned: %+v", info.Problems)
	}
	info := infoOf(t, out, "shop", "b")
	if info.Rejected || len(info.Problems) != 1 || info.Problems[0].Reason != ReasonAnnotationWarning ||
		!strings.Contains(info.Problems[0].Message, "shop-web-80") || !strings.Contains(info.Problems[0].Message, "shop/a") {
		t.Fatalf("the loser's warning: %+v", info)
	}
	// Balancing is on the backends, never on the locations.
	var s bus.Server
	if err := json.Unmarshal(out.Puts[serverKey], &s); err != nil {
		t.Fatal(err)
	}
	for _, loc := range s.Locations {
		if loc.Features != nil {
			t.Fatalf("location %s has features %+v", loc.Path, loc.Features)
		}
	}

	// A change of shop/a's hash: the backend is pushed, no server.
	out = updateBalancing(t, a, map[string][]byte{
		bus.Key(bus.KindIngress, "shop", "a"): agedIngressJSON(t, "shop", "a", 100, map[string]string{"upstream-hash-by": "$remote_addr"}),
	})
	if _, ok := out.Puts[serverKey]; ok {
		t.Errorf("a balancing change re-emitted the server")
	}
	if web := decodeBackend(t, out, "shop-web-80"); hashBy(web) != "$remote_addr" {
		t.Fatalf("hash not updated: %+v", web)
	}

	// shop/a drops its annotations: shop/b wins, and its warning goes.
	out = updateBalancing(t, a, map[string][]byte{bus.Key(bus.KindIngress, "shop", "a"): agedIngressJSON(t, "shop", "a", 100, nil)})
	if web := decodeBackend(t, out, "shop-web-80"); web.LoadBalance != "ewma" || web.UpstreamHashByConfig != nil {
		t.Fatalf("after shop/a dropped its annotations: %+v", web)
	}
	if info := infoOf(t, out, "shop", "b"); len(info.Problems) != 0 {
		t.Fatalf("shop/b still warned: %+v", info.Problems)
	}

	// shop/b loses them too: every backend is back to the default, byte
	// for byte as translated.
	out = updateBalancing(t, a, map[string][]byte{bus.Key(bus.KindIngress, "shop", "b"): agedIngressJSON(t, "shop", "b", 200, nil)})
	for _, name := range []string{"shop-web-80", "shop-api-80"} {
		if got := out.Puts[bus.Key(bus.KindBackend, name)]; string(got) != string(backendJSON(t, name)) {
			t.Fatalf("%s not restored: %s", name, got)
		}
	}

	// A rejected Ingress's balancing is not applied.
	out = updateBalancing(t, a, map[string][]byte{bus.Key(bus.KindIngress, "shop", "b"): agedIngressJSON(t, "shop", "b", 200,
		map[string]string{"load-balance": "ewma", "affinity": "ip"})})
	if api := decodeBackend(t, out, "shop-api-80"); api.LoadBalance != "" {
		t.Fatalf("rejected Ingress applied: %+v", api)
	}
	if info := infoOf(t, out, "shop", "b"); !info.Rejected {
		t.Fatalf("affinity: ip not rejected: %+v", info)
	}
}

// TestBalancingOldestWins: of two Ingresses asking a shared backend for
// different balancing, the older one's applies, as in ingress-nginx (the
// first Ingress in its age order creates the upstream), whatever their
// names; in a same-second tie the name sorting last counts as the older.
func TestBalancingOldestWins(t *testing.T) {
	server := &bus.Server{Hostname: "shop.example.com", Locations: []bus.Location{
		{Path: "/a", PathType: bus.PathPrefix, Backend: "shop-web-80", Ingress: "shop/a"},
		{Path: "/b", PathType: bus.PathPrefix, Backend: "shop-web-80", Ingress: "shop/b"},
	}}
	for _, tc := range []struct {
		name               string
		createdA, createdB int64
		winner, loser      string
	}{
		{"a older", 100, 200, "a", "b"},
		{"b older", 200, 100, "b", "a"},
		{"same second", 100, 100, "b", "a"},
	} {
		a := builtinAnnotator(t, balancing.New(), canary.New())
		out := updateBalancing(t, a, map[string][]byte{
			bus.Key(bus.KindServer, "shop.example.com"): mustJSON(t, server),
			bus.Key(bus.KindBackend, "shop-web-80"):     backendJSON(t, "shop-web-80"),
			bus.Key(bus.KindIngress, "shop", "a"):       agedIngressJSON(t, "shop", "a", tc.createdA, map[string]string{"upstream-hash-by": "$request_uri"}),
			bus.Key(bus.KindIngress, "shop", "b"):       agedIngressJSON(t, "shop", "b", tc.createdB, map[string]string{"load-balance": "ewma"}),
		})
		web := decodeBackend(t, out, "shop-web-80")
		if got := map[bool]string{true: "a", false: "b"}[hashBy(web) == "$request_uri"]; got != tc.winner ||
			(tc.winner == "b") != (web.LoadBalance == "ewma") {
			t.Errorf("%s: backend %+v, want shop/%s's balancing", tc.name, web, tc.winner)
		}
		if info := infoOf(t, out, "shop", tc.winner); len(info.Problems) != 0 {
			t.Errorf("%s: the winner is warned: %+v", tc.name, info.Problems)
		}
		if info := infoOf(t, out, "shop", tc.loser); len(info.Problems) != 1 || !strings.Contains(info.Problems[0].Message, "shop/"+tc.winner) {
			t.Errorf("%s: the loser's warning: %+v", tc.name, info.Problems)
		}
	}
}

// TestBalancingSharedWithoutConflict: equal settings, or an Ingress with
// none, are no conflict.
func TestBalancingSharedWithoutConflict(t *testing.T) {
	a := builtinAnnotator(t, balancing.New())
	cookie := map[string]string{"affinity": "cookie", "session-cookie-name": "route"}
	out := updateBalancing(t, a, map[string][]byte{
		bus.Key(bus.KindServer, "h"): mustJSON(t, &bus.Server{Hostname: "h", Locations: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "web", Ingress: "x/a"},
			{Path: "/b", PathType: bus.PathPrefix, Backend: "web", Ingress: "x/b"},
			{Path: "/c", PathType: bus.PathPrefix, Backend: "web", Ingress: "x/c"},
		}}),
		bus.Key(bus.KindBackend, "web"):    backendJSON(t, "web"),
		bus.Key(bus.KindIngress, "x", "a"): ingressJSON(t, "x", "a", nil),
		bus.Key(bus.KindIngress, "x", "b"): ingressJSON(t, "x", "b", cookie),
		bus.Key(bus.KindIngress, "x", "c"): ingressJSON(t, "x", "c", cookie),
	})
	web := decodeBackend(t, out, "web")
	if web.SessionAffinityConfig == nil || web.SessionAffinityConfig.CookieSessionAffinity.Name != "route" || web.SessionAffinityConfig.Mode != "balanced" {
		t.Fatalf("affinity: %+v", web.SessionAffinityConfig)
	}
	for _, name := range []string{"a", "b", "c"} {
		if info := infoOf(t, out, "x", name); len(info.Problems) != 0 {
			t.Errorf("x/%s warned: %+v", name, info.Problems)
		}
	}
}

// TestBalancingGlobalLoadBalance: the ConfigMap's load-balance reaches
// every backend; an annotation overrides it; switching back restores the
// translated bytes.
func TestBalancingGlobalLoadBalance(t *testing.T) {
	a := builtinAnnotator(t, balancing.New())
	settings := bus.DefaultSettings()
	settings.LoadBalance = bus.LoadBalanceEWMA
	out := updateBalancing(t, a, map[string][]byte{
		bus.Key(bus.KindServer, "h"): mustJSON(t, &bus.Server{Hostname: "h", Locations: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "web", Ingress: "x/a"},
		}}),
		bus.Key(bus.KindBackend, "web"):    backendJSON(t, "web"),
		bus.Key(bus.KindBackend, "other"):  backendJSON(t, "other"),
		bus.Key(bus.KindIngress, "x", "a"): ingressJSON(t, "x", "a", map[string]string{"load-balance": "round_robin"}),
		bus.SettingsKey:                    mustJSON(t, settings),
	})
	if web := decodeBackend(t, out, "web"); web.LoadBalance != "" {
		t.Fatalf("annotation round_robin did not override ewma: %+v", web)
	}
	if other := decodeBackend(t, out, "other"); other.LoadBalance != "ewma" {
		t.Fatalf("global ewma not applied: %+v", other)
	}
	out = updateBalancing(t, a, map[string][]byte{bus.SettingsKey: mustJSON(t, bus.DefaultSettings())})
	if got := out.Puts[bus.Key(bus.KindBackend, "other")]; string(got) != string(backendJSON(t, "other")) {
		t.Fatalf("back to round_robin: %s", got)
	}
}

// TestBalancingWithCanary: canary fields and balancing on the same
// backends; the canary Ingress's balancing goes to the canary backend.
func TestBalancingWithCanary(t *testing.T) {
	a := builtinAnnotator(t, balancing.New(), canary.New())
	out := updateBalancing(t, a, map[string][]byte{
		bus.Key(bus.KindServer, "h"): mustJSON(t, &bus.Server{Hostname: "h", Locations: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "stable", Ingress: "shop/primary",
				Canary: &bus.LocationCanary{Ingress: "shop/canary", Backend: "next"}},
		}}),
		bus.Key(bus.KindBackend, "stable"):          backendJSON(t, "stable"),
		bus.Key(bus.KindBackend, "next"):            backendJSON(t, "next"),
		bus.Key(bus.KindIngress, "shop", "primary"): ingressJSON(t, "shop", "primary", map[string]string{"affinity": "cookie"}),
		bus.Key(bus.KindIngress, "shop", "canary"): ingressJSON(t, "shop", "canary",
			map[string]string{"canary": "true", "canary-weight": "20", "upstream-hash-by": "$request_uri"}),
	})
	stable := decodeBackend(t, out, "stable")
	if len(stable.AlternativeBackends) != 1 || stable.SessionAffinityConfig == nil || stable.UpstreamHashByConfig != nil {
		t.Fatalf("primary backend: %+v", stable)
	}
	next := decodeBackend(t, out, "next")
	if next.TrafficShapingPolicy == nil || next.TrafficShapingPolicy.Weight != 20 || hashBy(next) != "$request_uri" || next.SessionAffinityConfig != nil {
		t.Fatalf("canary backend: %+v", next)
	}
	for _, b := range []*bus.Backend{stable, next} {
		if err := b.Validate(); err != nil {
			t.Fatalf("%s: %v", b.Name, err)
		}
	}
	// The canary's weight changes: its balancing stays.
	out = updateBalancing(t, a, map[string][]byte{bus.Key(bus.KindIngress, "shop", "canary"): ingressJSON(t, "shop", "canary",
		map[string]string{"canary": "true", "canary-weight": "50", "upstream-hash-by": "$request_uri"})})
	if next := decodeBackend(t, out, "next"); next.TrafficShapingPolicy.Weight != 50 || hashBy(next) != "$request_uri" {
		t.Fatalf("canary backend after weight change: %+v", next)
	}
}

func TestApplyBalancing(t *testing.T) {
	stale := func() *bus.Backend {
		return &bus.Backend{Name: "web", LoadBalance: bus.LoadBalanceEWMA,
			UpstreamHashByConfig:  &bus.UpstreamHashByConfig{UpstreamHashBy: "$uri"},
			SessionAffinityConfig: &bus.SessionAffinityConfig{Name: bus.AffinityCookie}}
	}
	b := stale()
	applyBalancing(nil, b, bus.LoadBalanceRoundRobin)
	if b.LoadBalance != "" || b.UpstreamHashByConfig != nil || b.SessionAffinityConfig != nil {
		t.Errorf("nil with round_robin: %+v", b)
	}
	b = stale()
	applyBalancing(nil, b, bus.LoadBalanceEWMA)
	if b.LoadBalance != bus.LoadBalanceEWMA || b.UpstreamHashByConfig != nil {
		t.Errorf("nil with the global ewma: %+v", b)
	}
	b = stale()
	applyBalancing(&bus.Balancing{LoadBalance: bus.LoadBalanceRoundRobin}, b, bus.LoadBalanceEWMA)
	if b.LoadBalance != "" {
		t.Errorf("annotation round_robin over the global ewma: %+v", b)
	}
	hash := &bus.Balancing{UpstreamHash: &bus.UpstreamHashByConfig{UpstreamHashBy: "$request_uri"}}
	b = stale()
	applyBalancing(hash, b, bus.LoadBalanceRoundRobin)
	if b.UpstreamHashByConfig == nil || b.UpstreamHashByConfig.UpstreamHashBy != "$request_uri" || b.SessionAffinityConfig != nil {
		t.Errorf("hash: %+v", b)
	}
	// The backend gets a copy: changing it leaves the plugin's result alone.
	b.UpstreamHashByConfig.UpstreamHashBy = "x"
	if hash.UpstreamHash.UpstreamHashBy != "$request_uri" {
		t.Errorf("applyBalancing shares the config with the backend")
	}
}
