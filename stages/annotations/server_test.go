package annotations

import (
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// TestServerFeaturesFollowIngressAge: two Ingresses of one host set
// different ssl-ciphers; the server takes the older one's, as ingress-nginx
// does, whatever their names: in a same-second tie the name that sorts
// last counts as the older, and an Ingress whose information has not
// arrived counts as the newest.
func TestServerFeaturesFollowIngressAge(t *testing.T) {
	const first, last = "ns/a", "ns/z"
	ciphers := map[string]string{first: "AES128-SHA", last: "AES256-SHA"}
	for _, tc := range []struct {
		name    string
		created map[string]int64 // no entry: no IngressInfo
		wantBy  string
	}{
		{"the name sorting last is older", map[string]int64{first: 200, last: 100}, last},
		{"the name sorting first is older", map[string]int64{first: 100, last: 200}, first},
		{"same second", map[string]int64{first: 100, last: 100}, last},
		{"no creation times", map[string]int64{first: 0, last: 0}, last},
		{"information missing", map[string]int64{first: 200}, first},
	} {
		a := NewAnnotator(nil, bus.DefaultAnnotationsPrefix, nil)
		for id, c := range ciphers {
			a.results[id] = &ingressResult{features: &bus.Features{Server: &features.Server{SSLCiphers: c}}}
		}
		for id, created := range tc.created {
			a.ingresses[id] = &bus.IngressInfo{Namespace: "ns", Name: id[len("ns/"):], Created: created}
		}
		s := &bus.Server{Hostname: "h.example.com", Locations: []bus.Location{
			{Path: "/a", PathType: bus.PathPrefix, Ingress: first},
			{Path: "/z", PathType: bus.PathPrefix, Ingress: last},
		}}
		a.applyServerFeatures(s)
		if s.SSLCiphers != ciphers[tc.wantBy] || s.ServerFeaturesFrom != tc.wantBy {
			t.Errorf("%s: ssl-ciphers %q from %s, want %q from %s", tc.name, s.SSLCiphers, s.ServerFeaturesFrom, ciphers[tc.wantBy], tc.wantBy)
		}
	}
}
