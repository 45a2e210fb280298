package renderer

// Paths protected by access control (issue 10, finding 3). An Ingress may
// add paths to a host another namespace serves; it must never open a path
// that namespace protects. prefixLocations renders a protected Prefix path
// "^~" and regexLocations puts protected regexes first, so no regex path
// takes its requests; withoutForeignNested keeps another namespace's
// Exact and Prefix paths out of it, since NGINX would otherwise give them
// the requests under it (an exact or longer prefix match wins).

import (
	"fmt"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// protected reports whether a location restricts who reaches its backend:
// basic or external auth, its own source ranges (Access), or a fixed
// answer in its place (Deny). Rate limits are not access control.
func protected(f *bus.Features) bool {
	return f != nil && (f.Auth != nil || f.Deny != nil || f.Access != nil)
}

// namespaceOf is the namespace of an Ingress "namespace/name"; "" for a
// location no Ingress owns (the default backend's "/").
func namespaceOf(ingress string) string {
	ns, _, _ := strings.Cut(ingress, "/")
	return ns
}

// withoutForeignNested returns s without the Exact and Prefix locations of
// other namespaces that lie at or under a protected Prefix location, and
// an error naming each one left out. Regex locations are left to "^~".
// The server is copied, never changed in place.
func withoutForeignNested(s *bus.Server) (*bus.Server, []error) {
	regexIngress := regexIngresses(s.Locations)
	var guards []bus.Location
	for _, l := range s.Locations {
		if l.PathType == bus.PathPrefix && l.Ingress != "" && protected(l.Features) && !isRegexLocation(l, regexIngress) {
			guards = append(guards, l)
		}
	}
	if len(guards) == 0 {
		return s, nil
	}
	var kept []bus.Location
	var errs []error
	for _, l := range s.Locations {
		if g, ok := guardOf(l, guards, regexIngress); ok {
			errs = append(errs, fmt.Errorf("render server %s: path %q of Ingress %s left out: it is at or under %q, which Ingress %s of another namespace protects (auth)",
				s.Hostname, l.Path, l.Ingress, g.Path, g.Ingress))
			continue
		}
		kept = append(kept, l)
	}
	if len(errs) == 0 {
		return s, nil
	}
	out := *s
	out.Locations = kept
	return &out, errs
}

// guardOf finds a guard of another namespace whose Prefix path covers the
// Exact or Prefix location l.
func guardOf(l bus.Location, guards []bus.Location, regexIngress map[string]bool) (bus.Location, bool) {
	if isRegexLocation(l, regexIngress) {
		return bus.Location{}, false
	}
	path := strings.TrimRight(l.Path, "/")
	for _, g := range guards {
		if namespaceOf(g.Ingress) == namespaceOf(l.Ingress) {
			continue
		}
		p := strings.TrimRight(g.Path, "/")
		// Two protected Prefix paths of one path guard each other: neither
		// covers the other, they conflict (the translator's business).
		equal := path == p && !(l.PathType == bus.PathPrefix && protected(l.Features))
		if equal || strings.HasPrefix(path, p+"/") || (p == "" && path != "") {
			return g, true
		}
	}
	return bus.Location{}, false
}
