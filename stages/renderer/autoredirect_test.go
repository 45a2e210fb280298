package renderer

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestNoAutomaticRedirect: every location named "/p/" has a location
// named "/p", so NGINX never answers 301 on its own (issue 13). The "/p"
// is a copy of what covers /p otherwise, or a 404.
func TestNoAutomaticRedirect(t *testing.T) {
	auth := &bus.Features{Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://auth.example.com/"}}}
	for _, tc := range []struct {
		name string
		locs []bus.Location
		want []string // modifier, path and backend of each location
	}{{
		name: "exact with a trailing slash falls back to the root",
		locs: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "root", Ingress: "ns/r"},
			{Path: "/foo/", PathType: bus.PathExact, Backend: "foo", Ingress: "ns/f"},
		},
		want: []string{"/ root", "= /foo/ foo", "/foo root"},
	}, {
		name: "the longest covering prefix, protected stays protected",
		locs: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "root", Ingress: "ns/r"},
			{Path: "/a", PathType: bus.PathPrefix, Backend: "a", Ingress: "ns/a", Features: auth},
			{Path: "/a/b/", PathType: bus.PathExact, Backend: "b", Ingress: "ns/b"},
		},
		want: []string{"/ root", "^~ /a/ a", "= /a a", "= /a/b/ b", "^~ /a/b a"},
	}, {
		name: "nothing covers: a 404",
		locs: []bus.Location{{Path: "/foo/", PathType: bus.PathExact, Backend: "foo", Ingress: "ns/f"}},
		want: []string{"= /foo/ foo", "/foo "},
	}, {
		name: "prefix with a trailing slash already has its exact twin",
		locs: []bus.Location{{Path: "/foo/", PathType: bus.PathPrefix, Backend: "foo", Ingress: "ns/f"}},
		want: []string{"/foo/ foo", "= /foo foo"},
	}, {
		name: "an exact /foo beside an exact /foo/ is kept",
		locs: []bus.Location{
			{Path: "/foo", PathType: bus.PathExact, Backend: "a", Ingress: "ns/a"},
			{Path: "/foo/", PathType: bus.PathExact, Backend: "b", Ingress: "ns/b"},
		},
		want: []string{"= /foo a", "= /foo/ b"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			locs, err := nginxLocations(tc.locs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range locs {
				got = append(got, l.Modifier+l.Path+" "+l.Backend)
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("locations\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
