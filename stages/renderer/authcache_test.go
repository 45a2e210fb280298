package renderer

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

func externalAuthServer(host, ingress string, e *bus.ExternalAuth) *bus.Server {
	return &bus.Server{Hostname: host, Locations: []bus.Location{{Path: "/", PathType: bus.PathPrefix, Backend: "b", Ingress: ingress,
		Features: &bus.Features{Auth: &bus.Auth{External: e}}}}}
}

// TestAuthZonesIncremental: the auth cache and the keepalive upstreams in
// zones.conf follow the servers and the global auth settings through an
// incremental Renderer exactly as a full Render of the same model.
func TestAuthZonesIncremental(t *testing.T) {
	cached := &bus.ExternalAuth{URL: "http://127.0.0.1:9000/a", CacheKey: "$http_authorization", CacheDurations: []string{"200 1m"}}
	pooled := &bus.ExternalAuth{URL: "http://127.0.0.1:9001/a", Keepalive: &bus.AuthKeepalive{Connections: 2, Requests: 10, TimeoutSeconds: 5}}
	keyA, keyB, keyC := bus.Key(bus.KindServer, "a.example.com"), bus.Key(bus.KindServer, "b.example.com"), bus.Key(bus.KindServer, "c.example.com")
	plain := bus.DefaultSettings()
	globalCache := bus.DefaultSettings()
	globalCache.GlobalAuthURL, globalCache.GlobalAuthCacheKey = "http://127.0.0.1:9002/g", "$remote_user"
	upstream := "upstream " + authUpstreamID("default/b", pooled) + " {"
	// Global auth applies to locations of an Ingress.
	serverC := serverFor("c.example.com", "/", "b", bus.PathPrefix)
	serverC.Locations[0].Ingress = "default/c"
	steps := []struct {
		name         string
		key          string
		server       *bus.Server
		settings     *bus.Settings
		wantCache    bool
		wantUpstream bool
	}{
		{"a cached location", keyA, externalAuthServer("a.example.com", "default/a", cached), nil, true, false},
		{"a pooled location", keyB, externalAuthServer("b.example.com", "default/b", pooled), nil, true, true},
		{"the cache's last user goes", keyA, serverFor("a.example.com", "/", "b", bus.PathPrefix), nil, false, true},
		{"global auth with a cache key", keyC, serverC, &globalCache, true, true},
		{"global auth without one", "", nil, &plain, false, true},
		{"the pool's last user goes", keyB, nil, nil, false, false},
	}
	r := newFileRenderer(DefaultConfig())
	r.Flush()
	m := bus.NewModel()
	for _, s := range steps {
		if s.settings != nil {
			r.SetSettings(s.settings)
			m.Settings = s.settings
		}
		if s.key != "" {
			r.SetServer(s.key, s.server)
			if s.server == nil {
				delete(m.Servers, s.key)
			} else {
				m.Servers[s.key] = s.server
			}
		}
		if _, errs := r.Flush(); len(errs) > 0 {
			t.Fatalf("%s: %v", s.name, errs)
		}
		zones := r.Artifacts().Files[ZonesFile]
		if got := strings.Contains(zones, "keys_zone="+AuthCacheZone+":"); got != s.wantCache {
			t.Errorf("%s: auth cache declared %v, want %v:\n%s", s.name, got, s.wantCache, zones)
		}
		if got := strings.Contains(zones, upstream); got != s.wantUpstream {
			t.Errorf("%s: keepalive upstream declared %v, want %v:\n%s", s.name, got, s.wantUpstream, zones)
		}
		full, _ := Render(DefaultConfig(), m)
		if !maps.Equal(full.Files, r.Artifacts().Files) {
			t.Fatalf("%s: the incremental files differ from a full Render:\nincremental %v\nfull %v", s.name,
				slices.Sorted(maps.Keys(r.Artifacts().Files)), slices.Sorted(maps.Keys(full.Files)))
		}
	}
}

// TestAuthPoolRefusesVariableHost: features that ask keepalive for an
// auth URL whose host is a variable never reach nginx.conf.
func TestAuthPoolRefusesVariableHost(t *testing.T) {
	e := &bus.ExternalAuth{URL: "http://$host/a", Keepalive: &bus.AuthKeepalive{Connections: 2, Requests: 10, TimeoutSeconds: 5}}
	_, errs := Render(DefaultConfig(), bus.Model{Servers: map[string]*bus.Server{
		bus.Key(bus.KindServer, "a.example.com"): externalAuthServer("a.example.com", "default/a", e)}})
	if len(errs) == 0 {
		t.Fatal("rendered keepalive to a variable host")
	}
}

// TestAuthUpstreamRefused: NGINX refusing a keepalive upstream (its host
// does not resolve) is traced by the upstream's source comment to its
// Ingress; honouring that refusal leaves the Ingress out, upstream and
// locations, and keeps the other Ingresses.
func TestAuthUpstreamRefused(t *testing.T) {
	m := harness.ReadModel(t, "testdata/authcache.model.json")
	base, errs := Render(DefaultConfig(), m)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	rev := revIn(t, base.Files[ZonesFile], "app/pooled")
	ref := &bus.Refusal{Kind: bus.RefusedIngress, Name: "app/pooled", Rev: rev, Message: "host not found in upstream"}
	art, errs := RenderRefused(DefaultConfig(), m, map[string]*bus.Refusal{ref.Key(): ref})
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	zones, server := art.Files[ZonesFile], art.Files[ServerFile("auth.example.com")]
	if strings.Contains(zones, "auth_app_pooled") || strings.Contains(server, "app/pooled") || strings.Contains(server, `"/pooled`) {
		t.Errorf("the refused Ingress is still rendered:\n%s\n%s", zones, server)
	}
	if !strings.Contains(zones, "auth_app_cached") || !strings.Contains(server, `"/cached`) {
		t.Errorf("the other Ingress went too:\n%s\n%s", zones, server)
	}
}
