package renderer

import "switchyard.dev/switchyard/bus"

// withGlobalAuth applies the ConfigMap's global-auth-url to a location's
// features, as ingress-nginx does: a location whose Ingress has no
// auth-url of its own, has not said enable-global-auth: "false", and whose
// path does not start with one of no-auth-locations is asked of the global
// auth service too (next to its basic auth, if any). When global-auth-url
// could not be read such a location answers 403 instead: what the operator
// put behind auth must not open on a typo. f is not changed.
func withGlobalAuth(f *bus.Features, path string, s bus.Settings) *bus.Features {
	if s.GlobalAuthURL == "" && !s.Unreadable(bus.KeyGlobalAuthURL) {
		return f
	}
	var out bus.Features
	if f != nil {
		out = *f
	}
	if out.Deny != nil || (out.GlobalAuth != nil && out.GlobalAuth.Off) || (out.Auth != nil && out.Auth.External != nil) ||
		s.GlobalAuthSkips(path) {
		return f
	}
	if s.Unreadable(bus.KeyGlobalAuthURL) {
		out.Deny = &bus.Deny{Status: 403, Reason: "global-auth-url cannot be read"}
		return &out
	}
	auth := &bus.Auth{External: s.GlobalExternalAuth()}
	if out.Auth != nil {
		auth.Basic = out.Auth.Basic
	}
	out.Auth = auth
	return &out
}
