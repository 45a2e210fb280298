package renderer

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

var zoneIDPattern = regexp.MustCompile(`^rl_[a-z0-9_]{1,60}$`)

func TestRateLimitID(t *testing.T) {
	rl := &bus.RateLimit{RPS: 1, BurstMultiplier: 5}
	ids := map[string]string{}
	for _, ing := range []string{"a-b/c", "a.b/c", "a/b-c", "default/web", "", strings.Repeat("x", 300) + "/y", "ns/名前\n}"} {
		id := rateLimitID(ing, rl)
		if !zoneIDPattern.MatchString(id) {
			t.Errorf("%q: id %q is not a safe NGINX name", ing, id)
		}
		if other, dup := ids[id]; dup {
			t.Errorf("%q and %q share zone id %s", ing, other, id)
		}
		ids[id] = ing
	}
	base := rateLimitID("default/web", rl)
	// What the zone declarations hold changes the id; what only the
	// locations hold does not.
	for name, changed := range map[string]*bus.RateLimit{
		"rps": {RPS: 2, BurstMultiplier: 5}, "rpm": {RPS: 1, RPM: 1, BurstMultiplier: 5},
		"connections": {RPS: 1, Connections: 1, BurstMultiplier: 5}, "allowlist": {RPS: 1, BurstMultiplier: 5, Allowlist: []string{"10.0.0.0/8"}},
	} {
		if rateLimitID("default/web", changed) == base {
			t.Errorf("changing %s keeps the zone id", name)
		}
	}
	if rateLimitID("default/web", &bus.RateLimit{RPS: 1, BurstMultiplier: 1, RateKB: 9}) != base {
		t.Error("the burst multiplier or limit-rate changed the zone id")
	}
}

func limitedServer(host, ingress string, rl *bus.RateLimit) *bus.Server {
	return &bus.Server{Hostname: host, Locations: []bus.Location{{Path: "/", PathType: bus.PathPrefix, Backend: "b", Ingress: ingress,
		Features: &bus.Features{RateLimit: rl}}}}
}

// TestRateLimitZonesIncremental: zones.conf follows the servers through an
// incremental Renderer exactly as a full Render of the same model, and is
// only rendered again when the set of zones changes.
func TestRateLimitZonesIncremental(t *testing.T) {
	v1 := &bus.RateLimit{RPS: 1, BurstMultiplier: 1, Allowlist: []string{"127.0.0.1/32"}}
	v2 := &bus.RateLimit{RPS: 1, Connections: 3, BurstMultiplier: 1}
	keyA, keyB := bus.Key(bus.KindServer, "a.example.com"), bus.Key(bus.KindServer, "b.example.com")
	keyC := bus.Key(bus.KindServer, "c.example.com")
	zonesKey := fileKey(ZonesFile)
	steps := []struct {
		name      string
		key       string
		server    *bus.Server
		wantPut   bool // zones.conf is put by this flush
		wantDel   bool // zones.conf is deleted by this flush
		wantZones []string
		wantErr   bool
	}{
		{"first limited server", keyA, limitedServer("a.example.com", "default/web", v1), true, false, []string{rateLimitID("default/web", v1)}, false},
		{"same Ingress on a second host", keyB, limitedServer("b.example.com", "default/web", v1), false, false, []string{rateLimitID("default/web", v1)}, false},
		{"a server without limits", keyC, serverFor("c.example.com", "/", "b", bus.PathPrefix), false, false, []string{rateLimitID("default/web", v1)}, false},
		{"one host changes the limit", keyA, limitedServer("a.example.com", "default/web", v2), true, false,
			[]string{rateLimitID("default/web", v1), rateLimitID("default/web", v2)}, false},
		{"the other follows", keyB, limitedServer("b.example.com", "default/web", v2), true, false, []string{rateLimitID("default/web", v2)}, false},
		{"limit-rate only needs no zone", keyA, limitedServer("a.example.com", "default/web", &bus.RateLimit{RateKB: 10}), false, false, []string{rateLimitID("default/web", v2)}, false},
		{"a server that fails its checks keeps no zone", keyB, limitedServer("b.example.com", "default/web", &bus.RateLimit{RPS: 1, Allowlist: []string{"10.0.0.1/8"}}), false, true, nil, true},
		{"a new Ingress", keyB, limitedServer("b.example.com", "other/api", v1), true, false, []string{rateLimitID("other/api", v1)}, false},
		{"removed", keyB, nil, false, true, nil, false},
	}
	r := newFileRenderer(DefaultConfig())
	r.Flush()
	m := bus.NewModel()
	for _, s := range steps {
		r.SetServer(s.key, s.server)
		out, errs := r.Flush()
		if (len(errs) > 0) != s.wantErr {
			t.Fatalf("%s: errors %v", s.name, errs)
		}
		if s.server == nil {
			delete(m.Servers, s.key)
		} else {
			m.Servers[s.key] = s.server
		}
		_, put := out.Values[zonesKey]
		del := slices.Contains(out.Deletes, zonesKey)
		if put != s.wantPut || del != s.wantDel {
			t.Errorf("%s: zones.conf put %v deleted %v, want %v %v", s.name, put, del, s.wantPut, s.wantDel)
		}
		zones := r.Artifacts().Files[ZonesFile]
		for _, id := range s.wantZones {
			if !strings.Contains(zones, "zone="+id+"_") {
				t.Errorf("%s: zone %s missing from:\n%s", s.name, id, zones)
			}
		}
		if got := strings.Count(zones, "limit_req_zone"); got != len(s.wantZones) {
			t.Errorf("%s: %d limit_req_zone, want %d:\n%s", s.name, got, len(s.wantZones), zones)
		}
		full, _ := Render(DefaultConfig(), m)
		if !maps.Equal(full.Files, r.Artifacts().Files) {
			t.Fatalf("%s: the incremental files differ from a full Render:\nincremental %v\nfull %v", s.name,
				slices.Sorted(maps.Keys(r.Artifacts().Files)), slices.Sorted(maps.Keys(full.Files)))
		}
		if s.name == "one host changes the limit" {
			// Two generations of one Ingress's zones side by side are valid.
			harness.NginxTest(t, harness.Nginx(t), harness.Prefix(t, r.Artifacts().Files))
		}
	}
}

// TestZoneKey: limit-conn-zone-variable keys every zone; the default is
// written as it is and keeps the zone names, another variable goes
// through nginx.conf's map and gives other zone names (NGINX refuses a
// zone whose key changed across a reload); anything else is refused.
func TestZoneKey(t *testing.T) {
	id := rateLimitID("default/web", &bus.RateLimit{RPS: 1, BurstMultiplier: 5})
	tests := []struct {
		variable, key string
		sameID        bool
	}{
		{bus.DefaultLimitConnZoneVariable, "$binary_remote_addr", true},
		{"$http_x_client_id", limitKeyVariable, false},
		{"$remote_addr", limitKeyVariable, false},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		key, err := zoneKey(tt.variable)
		if err != nil || key != tt.key {
			t.Errorf("%s: key %q, %v; want %q", tt.variable, key, err, tt.key)
		}
		got := zoneKeyID(id, tt.variable)
		if (got == id) != tt.sameID || !zoneIDPattern.MatchString(got) {
			t.Errorf("%s: zone id %q (base %q)", tt.variable, got, id)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("%s and %s share zone id %s", tt.variable, other, got)
		}
		seen[got] = tt.variable
	}
	if zoneKeyID("", "$http_x_client_id") != "" {
		t.Error("a location without zones got a zone id")
	}
	for _, bad := range []string{"", "binary_remote_addr", "$a;b", "$a $b", "$a$b", "${a}", "$" + strings.Repeat("a", 65)} {
		if _, err := zoneKey(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	s := bus.DefaultSettings()
	s.LimitConnZoneVariable = "$a; include /etc/passwd"
	if _, err := newMainView(DefaultConfig(), s, sources{settings: &s}, nil); err == nil {
		t.Error("nginx.conf written with an unchecked limit-conn-zone-variable")
	}
}
