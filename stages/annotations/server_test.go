package annotations

import (
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// TestServerFeaturesFollowIngressOrder: two Ingresses of one host set
// different ssl-ciphers; the server takes the older one's (the first of
// the translator's IngressOrder), as ingress-nginx does, though its name
// sorts after the other's. A server without an order (one Ingress, or an
// older table) falls back to namespace/name.
func TestServerFeaturesFollowIngressOrder(t *testing.T) {
	a := NewAnnotator(nil, bus.DefaultAnnotationsPrefix, nil)
	for id, ciphers := range map[string]string{"ns/a-newer": "AES128-SHA", "ns/z-older": "AES256-SHA"} {
		a.results[id] = &ingressResult{features: &bus.Features{Server: &features.Server{SSLCiphers: ciphers}}}
	}
	server := func(order ...string) *bus.Server {
		return &bus.Server{Hostname: "h.example.com", IngressOrder: order, Locations: []bus.Location{
			{Path: "/a", PathType: bus.PathPrefix, Ingress: "ns/a-newer"},
			{Path: "/z", PathType: bus.PathPrefix, Ingress: "ns/z-older"},
		}}
	}
	for _, tc := range []struct {
		name                string
		server              *bus.Server
		wantCiphers, wantBy string
	}{
		{"in age order", server("ns/z-older", "ns/a-newer"), "AES256-SHA", "ns/z-older"},
		{"without an order", server(), "AES128-SHA", "ns/a-newer"},
		{"an order missing one", server("ns/z-older"), "AES256-SHA", "ns/z-older"},
	} {
		s := tc.server
		a.applyServerFeatures(s)
		if s.SSLCiphers != tc.wantCiphers || s.ServerFeaturesFrom != tc.wantBy {
			t.Errorf("%s: ssl-ciphers %q from %s, want %q from %s", tc.name, s.SSLCiphers, s.ServerFeaturesFrom, tc.wantCiphers, tc.wantBy)
		}
	}
}
