package renderer

// Rendering of the redirect and rewrite feature groups
// (bus/features_redirect.go, bus/features_rewrite.go).

import (
	"cmp"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// wantsRegex reports whether a location asks for regex paths: use-regex,
// or a rewrite-target other than its path.
func wantsRegex(l bus.Location) bool {
	rw := rewriteOf(l.Features)
	return rw != nil && (rw.UseRegex || (rw.Target != "" && rw.Target != l.Path))
}

// regexIngresses are the Ingresses ("namespace/name") with a location that
// asks for regex paths: every path of such an Ingress is a regex, as in
// ingress-nginx, but the paths of other Ingresses are not (ingress-nginx
// makes every location of the host a regex).
func regexIngresses(locs []bus.Location) map[string]bool {
	out := map[string]bool{}
	for _, l := range locs {
		if l.Ingress != "" && wantsRegex(l) {
			out[l.Ingress] = true
		}
	}
	return out
}

func isRegexLocation(l bus.Location, regexIngress map[string]bool) bool {
	return wantsRegex(l) || (l.Ingress != "" && regexIngress[l.Ingress])
}

func rewriteOf(f *bus.Features) *bus.Rewrite {
	if f == nil {
		return nil
	}
	return f.Rewrite
}

// regexLocations renders the paths of regex Ingresses as
// `location ~* "^path"`, Exact and Prefix alike and Prefix not split.
// NGINX takes the first regex location that matches, so the order decides:
// protected locations (auth, Deny) first, so that a regex path of another
// Ingress never takes a request a protected regex path matches; then, as
// ingress-nginx orders them, longest path first, then lexically descending.
// Protected Prefix locations that are not regexes are "^~" (prefixLocations),
// which no regex location can take requests from.
func regexLocations(locs []bus.Location) ([]location, error) {
	var out []location
	seen := map[string]bool{}
	for _, l := range locs {
		if err := bus.CheckRegexPath(l.Path); err != nil {
			return nil, fmt.Errorf("location %q: %w", l.Path, err)
		}
		if err := checkLocation(l, true); err != nil {
			return nil, err
		}
		// Exact and Prefix of one path are one regex: the first wins, as
		// NGINX would refuse a duplicate location.
		if seen[l.Path] {
			continue
		}
		seen[l.Path] = true
		v := location{Modifier: "~* ", Path: "^" + l.Path, Backend: l.Backend, Features: l.Features,
			RateLimitID: locationRateLimitID(l), sortPath: l.Path, Ingress: l.Ingress, Canary: l.Canary, labels: labelsOf(l)}
		if rw := rewriteOf(l.Features); rw != nil && rw.Target != "" && rw.Target != l.Path {
			v.RewriteRegex = "^" + l.Path
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b location) int {
		if pa, pb := protected(a.Features), protected(b.Features); pa != pb {
			if pa {
				return -1
			}
			return 1
		}
		if c := cmp.Compare(len(b.sortPath), len(a.sortPath)); c != 0 {
			return c
		}
		return strings.Compare(b.sortPath, a.sortPath)
	})
	return out, nil
}

// wwwRedirect returns the host whose requests from-to-www-redirect sends
// to s: www.<host> for a bare host, <host> for www.<host>. There is none
// for the catch-all and wildcard hosts, and none when a server for that
// host exists: ingress-nginx then skips the redirect too.
func wwwRedirect(s *bus.Server, hostExists func(string) bool) string {
	wanted := false
	for _, l := range s.Locations {
		if l.Features != nil && l.Features.Redirect != nil && l.Features.Redirect.FromToWWW {
			wanted = true
			break
		}
	}
	if !wanted || s.Hostname == bus.DefaultServerName || strings.HasPrefix(s.Hostname, "*.") {
		return ""
	}
	from := wwwCounterpart(s.Hostname)
	if !hostPattern.MatchString(from) || (hostExists != nil && hostExists(from)) {
		return ""
	}
	return from
}

// wwwAsker is the Ingress whose location asks for from-to-www-redirect.
func wwwAsker(s *bus.Server) string {
	for _, l := range s.Locations {
		if l.Features != nil && l.Features.Redirect != nil && l.Features.Redirect.FromToWWW {
			return l.Ingress
		}
	}
	return ""
}

// wwwCounterpart is www.<host> for <host>, and <host> for www.<host>.
func wwwCounterpart(host string) string {
	if rest, ok := strings.CutPrefix(host, "www."); ok {
		return rest
	}
	return "www." + host
}

// indexHost records which model key serves a hostname and marks the
// server of its www counterpart for rendering: that server's redirect
// server appears or goes with this one.
func (r *Renderer) indexHost(host, key string, add bool) {
	if add {
		r.hosts[host] = key
	} else if r.hosts[host] == key {
		delete(r.hosts, host)
	}
	if other, ok := r.hosts[wwwCounterpart(host)]; ok {
		r.dirty.servers[other] = true
	}
	r.markCovered(host)
}

func (r *Renderer) hostExists(host string) bool {
	_, ok := r.hosts[host]
	return ok
}

// locationArgPattern is a location's argument: a path matching
// bus.RegexPathPattern, with "^" in front for a regex location, or with
// "/" appended for a Prefix one. "$" is never followed by a name.
var locationArgPattern = regexp.MustCompile(`^\^?/(?:[A-Za-z0-9._\-/~()*+?\[\]|^:@!,=%&]|\{[0-9]{1,3}(?:,[0-9]{0,3})?\}|\$[)|/])*\$?$`)

// locationArg writes a location's path or regex in double quotes. Unlike
// quote it lets "$" and {n,m} through: NGINX never interpolates variables
// in a location's argument, and regex paths need "$" as an anchor. Quotes,
// backslashes, ";", spaces and other braces are refused.
func locationArg(s string) (string, error) {
	if !locationArgPattern.MatchString(s) || strings.ContainsAny(s, "\"\\\r\n\x00") {
		return "", fmt.Errorf("refusing to write location %q into nginx.conf", s)
	}
	return `"` + s + `"`, nil
}

// rewriteTarget writes rewrite-target quoted. Its "$" must reach NGINX,
// which reads "$1"…"$9" as the regex's captures; the pattern admits "$"
// only before a digit 1-9, so no variable ("$host", "${x}", "$0") can be
// named.
func rewriteTarget(s string) (string, error) {
	if len(s) > 1024 || !bus.RewriteTargetPattern.MatchString(s) || strings.ContainsAny(s, "\"\\\r\n\x00") {
		return "", fmt.Errorf("refusing to write rewrite target %q into nginx.conf", s)
	}
	return `"` + s + `"`, nil
}

// luaLocation is the argument list a location of the server for host
// passes to switchyard.ingress.rewrite (ssl-redirect, force-ssl-redirect,
// preserve-trailing-slash, host): fixed words only, decided from the
// redirect group and, where it is silent, the ConfigMap; a path under
// no-tls-redirect-locations is never redirected. Literals rather
// than a table or variables: the block runs on every request, and a table
// constructor would allocate, a variable read would look up and copy, each
// time. The host is passed only for a server of one exact name, where
// $host (lower case, like Ingress hosts) can be nothing else; a wildcard
// or catch-all server leaves it out and Lua reads $host.
func luaLocation(settings bus.Settings, f *bus.Features, path, host string) (string, error) {
	ssl, force, preserve := redirectChoices(settings, f, path)
	args := fmt.Sprintf("%t, %t, %t", ssl, force, preserve)
	if host == "" || host == bus.DefaultServerName || strings.HasPrefix(host, "*") || host != strings.ToLower(host) {
		return args, nil
	}
	literal, err := luaString(host)
	if err != nil {
		return "", err
	}
	return args + ", " + literal, nil
}

// redirectChoices are a location's ssl-redirect, force-ssl-redirect and
// preserve-trailing-slash: its annotations', else the ConfigMap's.
func redirectChoices(settings bus.Settings, f *bus.Features, path string) (ssl, force, preserve bool) {
	ssl, force, preserve = settings.SSLRedirect, settings.ForceSSLRedirect, settings.PreserveTrailingSlash
	if f != nil && f.Redirect != nil {
		ssl = setOr(f.Redirect.SSLRedirect, ssl)
		force = setOr(f.Redirect.ForceSSLRedirect, force)
		preserve = setOr(f.Redirect.PreserveTrailingSlash, preserve)
	}
	if settings.NoTLSRedirect(path) {
		// no-tls-redirect-locations (ACME HTTP-01 challenges by default).
		ssl, force = false, false
	}
	return ssl, force, preserve
}

// setOr is *v when an annotation set it, else def (the ConfigMap's).
func setOr(v *bool, def bool) bool {
	if v == nil {
		return def
	}
	return *v
}

// rewriteRegex writes the rewrite directive's regex: the location's own
// regex, case-insensitive like the location. NGINX does not interpolate
// variables in it.
func rewriteRegex(s string) (string, error) {
	if !strings.HasPrefix(s, "^") {
		return "", fmt.Errorf("refusing rewrite regex %q: not anchored", s)
	}
	arg, err := locationArg(s)
	if err != nil {
		return "", err
	}
	return `"(?i)` + arg[1:], nil
}
