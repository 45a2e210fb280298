package renderer

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestWithoutForeignNested(t *testing.T) {
	auth := &bus.Features{Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://auth.example.com/"}}}
	deny := &bus.Features{Deny: &bus.Deny{Status: 503, Reason: "auth plugin down"}}
	regex := &bus.Features{Rewrite: &bus.Rewrite{UseRegex: true}}
	allowlist := &bus.Features{Access: &bus.Access{Allow: []string{"10.0.0.0/8"}}}
	loc := func(path, pathType, ingress string, f *bus.Features) bus.Location {
		return bus.Location{Path: path, PathType: pathType, Backend: "b", Ingress: ingress, Features: f}
	}
	for _, tc := range []struct {
		name    string
		locs    []bus.Location
		leftOut []string // paths
	}{
		{"nothing protected", []bus.Location{loc("/admin", bus.PathPrefix, "t/a", nil), loc("/admin/x", bus.PathPrefix, "o/x", nil)}, nil},
		{"foreign prefix, exact and equal path under auth", []bus.Location{
			loc("/admin", bus.PathPrefix, "t/a", auth),
			loc("/admin/x", bus.PathPrefix, "o/x", nil),
			loc("/admin", bus.PathExact, "o/x", nil),
			loc("/admin/", bus.PathPrefix, "o/y", auth),
			loc("/adminx", bus.PathPrefix, "o/x", nil),
			loc("/", bus.PathPrefix, "o/x", nil),
		}, []string{"/admin/x", "/admin"}},
		{"a protected path under another's", []bus.Location{
			loc("/admin", bus.PathPrefix, "t/a", auth), loc("/admin/x", bus.PathPrefix, "o/y", auth)}, []string{"/admin/x"}},
		{"same namespace may carve its own public path", []bus.Location{
			loc("/admin", bus.PathPrefix, "t/a", auth), loc("/admin/health", bus.PathExact, "t/b", nil)}, nil},
		{"a source range protects as auth does", []bus.Location{
			loc("/office", bus.PathPrefix, "t/a", allowlist), loc("/office/x", bus.PathPrefix, "o/x", nil)}, []string{"/office/x"}},
		{"a protected / covers the host", []bus.Location{
			loc("/", bus.PathPrefix, "t/a", deny), loc("/public", bus.PathPrefix, "o/x", nil)}, []string{"/public"}},
		{"regex paths are left to ^~", []bus.Location{
			loc("/admin", bus.PathPrefix, "t/a", auth), loc("/admin/x", bus.PathPrefix, "o/r", regex)}, nil},
		{"an exact protected path guards nothing under it", []bus.Location{
			loc("/admin", bus.PathExact, "t/a", auth), loc("/admin/x", bus.PathPrefix, "o/x", nil)}, nil},
		{"the default backend's / is not an Ingress's", []bus.Location{
			loc("/admin", bus.PathPrefix, "t/a", auth), {Path: "/", PathType: bus.PathPrefix}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &bus.Server{Hostname: "app.test", Locations: tc.locs}
			got, errs := withoutForeignNested(s)
			var left []string
			for _, err := range errs {
				msg := err.Error()
				left = append(left, msg[strings.Index(msg, `path "`)+6:strings.Index(msg, `" of Ingress`)])
			}
			if strings.Join(left, " ") != strings.Join(tc.leftOut, " ") {
				t.Fatalf("left out %q, want %q (%v)", left, tc.leftOut, errs)
			}
			if len(got.Locations)+len(left) != len(tc.locs) || len(s.Locations) != len(tc.locs) {
				t.Fatalf("kept %d of %d; the input changed: %v", len(got.Locations), len(tc.locs), len(s.Locations) != len(tc.locs))
			}
		})
	}
}
