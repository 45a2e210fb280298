package renderer

import (
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestBalancerArgsNameTheLocationsCanary: the canary declared for a host
// and path reaches Lua with the location, not with the backend (issue 13).
func TestBalancerArgsNameTheLocationsCanary(t *testing.T) {
	// The metrics' labels of a location no Ingress owns, on the catch-all.
	const labels = `, "\001\001\001", "_"`
	for _, tc := range []struct {
		name    string
		canary  *bus.LocationCanary
		want    string
		wantErr bool
	}{
		{"no canary", nil, `"web-stable-80", nil, nil, nil, nil, nil` + labels, false},
		{"a canary", &bus.LocationCanary{Ingress: "web/beta", Backend: "web-beta-80"}, `"web-stable-80", "web-beta-80", "web/beta", nil, nil, nil` + labels, false},
		{"a quote in the backend", &bus.LocationCanary{Ingress: "web/beta", Backend: `x"y`}, "", true},
		{"a quote in the Ingress", &bus.LocationCanary{Ingress: `web/"beta`, Backend: "web-beta-80"}, "", true},
		{"no namespace", &bus.LocationCanary{Ingress: "beta", Backend: "web-beta-80"}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := balancerArgs(location{Path: "/", Backend: "web-stable-80", Canary: tc.canary}, false, "_")
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("got %q, %v; want %q, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestCheckCanaryPolicies(t *testing.T) {
	ok := &bus.Canary{Weight: 1, WeightTotal: 100, Header: "X-Canary"}
	for _, tc := range []struct {
		name     string
		policies map[string]*bus.Canary
		wantErr  bool
	}{
		{"valid", map[string]*bus.Canary{"web/beta": ok}, false},
		{"bad Ingress key", map[string]*bus.Canary{`web/be"ta`: ok}, true},
		{"bad policy", map[string]*bus.Canary{"web/beta": {Weight: 1, WeightTotal: 100, Cookie: "a;b"}}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkCanaryFields(&bus.Backend{Name: "web-beta-80", CanaryPolicies: tc.policies})
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
