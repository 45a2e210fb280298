package renderer

import (
	"encoding/json"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// Balancing settings reach Lua unchanged when valid; invalid ones are
// reported and dropped, and the backend keeps serving round robin.
func TestBackendBalancingPayload(t *testing.T) {
	valid := &bus.Backend{Name: "ns-ok-80", Endpoints: []bus.Endpoint{{Address: "10.0.0.1", Port: "80"}},
		UpstreamHashByConfig: &bus.UpstreamHashByConfig{UpstreamHashBy: "$request_uri"},
		SessionAffinityConfig: &bus.SessionAffinityConfig{Name: "cookie", Mode: "persistent",
			CookieSessionAffinity: bus.CookieSessionAffinity{Name: "route", Path: "/", ChangeOnFailure: true}}}
	invalid := &bus.Backend{Name: "ns-bad-80", Endpoints: []bus.Endpoint{{Address: "10.0.0.2", Port: "80"}},
		LoadBalance: "ewma",
		SessionAffinityConfig: &bus.SessionAffinityConfig{Name: "cookie",
			CookieSessionAffinity: bus.CookieSessionAffinity{Path: "/; Domain=evil.test"}}}

	r := newFileRenderer(DefaultConfig())
	r.SetBackend(valid.Name, valid)
	r.SetBackend(invalid.Name, invalid)
	out, errs := r.Flush()

	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "ns-bad-80") || !strings.Contains(errs[0].Error(), "path") {
		t.Fatalf("errors %v, want one about ns-bad-80's cookie path", errs)
	}
	want, _ := json.Marshal(valid)
	if again := out.Puts[bus.Key(bus.KindBackend, valid.Name)]; string(again) != string(want) {
		t.Errorf("valid backend changed on its way to Lua:\n got %s\nwant %s", again, want)
	}
	bad := string(out.Puts[bus.Key(bus.KindBackend, invalid.Name)])
	if bad == "" || strings.Contains(bad, "evil") || strings.Contains(bad, "sessionAffinityConfig") || strings.Contains(bad, "load-balance") {
		t.Errorf("invalid backend payload %s", bad)
	}
	if !strings.Contains(bad, "10.0.0.2") {
		t.Errorf("invalid backend lost its endpoints: %s", bad)
	}
	if a := r.Artifacts().Backends[invalid.Name]; a == nil || a.SessionAffinityConfig != nil {
		t.Errorf("artifacts keep the invalid settings: %+v", a)
	}
	if invalid.SessionAffinityConfig == nil {
		t.Errorf("the input backend was modified")
	}
}
