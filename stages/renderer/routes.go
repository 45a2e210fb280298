package renderer

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// Lua routing (issue 12). A host whose server needs no NGINX directive of
// its own gets no server block: the renderer publishes its route (Kind
// "route" of the renderer's table) and lua/switchyard/router.lua serves it
// from the catch-all server, so adding, changing or removing the host
// needs no reload. dynamicServer below is the one place that decides which
// hosts qualify; everything it does not allow keeps a server block, so a
// feature added later is served by NGINX directives until it is added
// here and to router.lua.

// LuaRoute is the route of one Lua-routed host, as router.lua reads it.
type LuaRoute struct {
	Host string `json:"host"`
	// Locations are the server block's locations, in its order.
	Locations []LuaRouteLocation `json:"locations"`
	// data is the JSON, once encoded (encode).
	data []byte
}

// LuaRouteLocation is one location of a Lua-routed host: how it matches
// (as the location directive would) and what the location block would
// have set and called.
type LuaRouteLocation struct {
	// Match is the location's modifier: "=", "^~", "", "~*" or "~".
	Match string `json:"match"`
	// Path is the path, or the regex for "~*" and "~".
	Path string `json:"path"`
	// Kind is "proxy", "not-found" or "redirect".
	Kind string `json:"kind"`
	// RedirectURL and RedirectCode are permanent-redirect or
	// temporal-redirect (kind "redirect"): the location's
	// "return RedirectCode RedirectURL".
	RedirectURL  string `json:"redirect_url,omitempty"`
	RedirectCode int    `json:"redirect_code,omitempty"`
	// Upstream is $proxy_upstream_name.
	Upstream string `json:"upstream"`
	// Backend, CanaryBackend, CanaryIngress, Fallback and TagService are
	// balancer.rewrite's arguments (balancerArgs).
	Backend       string `json:"backend,omitempty"`
	CanaryBackend string `json:"canary_backend,omitempty"`
	CanaryIngress string `json:"canary_ingress,omitempty"`
	Fallback      string `json:"fallback,omitempty"`
	TagService    bool   `json:"tag_service,omitempty"`
	// SSLRedirect, ForceSSLRedirect and PreserveTrailingSlash are
	// ingress.rewrite's arguments (luaLocation).
	SSLRedirect           bool `json:"ssl_redirect"`
	ForceSSLRedirect      bool `json:"force_ssl_redirect"`
	PreserveTrailingSlash bool `json:"preserve_trailing_slash"`
	// The metrics' and the error backend's labels (metrics.go).
	Namespace    string `json:"namespace,omitempty"`
	IngressName  string `json:"ingress_name,omitempty"`
	Service      string `json:"service,omitempty"`
	ServicePort  string `json:"service_port,omitempty"`
	LocationPath string `json:"location_path,omitempty"`
	// AppRoot and XForwardedPrefix are app-root and x-forwarded-prefix.
	AppRoot          string `json:"app_root,omitempty"`
	XForwardedPrefix string `json:"x_forwarded_prefix,omitempty"`
	// ConnectTimeout, SendTimeout and ReadTimeout are proxy-*-timeout in
	// seconds, 0 for the http block's (the ConfigMap's): balancer.lua sets
	// them with ngx.balancer.set_timeouts, as the location's
	// proxy_*_timeout would.
	ConnectTimeout int `json:"connect_timeout,omitempty"`
	SendTimeout    int `json:"send_timeout,omitempty"`
	ReadTimeout    int `json:"read_timeout,omitempty"`
	// UpstreamVhost and ConnectionHeader are upstream-vhost and
	// connection-proxy-header: router.lua sets the variables the http
	// block's Host and Connection headers read, as the location's "set"
	// would.
	UpstreamVhost    string `json:"upstream_vhost,omitempty"`
	ConnectionHeader string `json:"connection_header,omitempty"`
	// RewriteRegex and RewriteTarget are rewrite-target: the location's
	// "rewrite RewriteRegex RewriteTarget break" (routedRewrite).
	RewriteRegex  string `json:"rewrite_regex,omitempty"`
	RewriteTarget string `json:"rewrite_target,omitempty"`
	// BodyLimit is proxy-body-size in bytes where it is below the shared
	// limit (the router location's client_max_body_size), else 0: see
	// routedBodyLimit.
	BodyLimit int64 `json:"body_limit,omitempty"`
	// CORS is enable-cors and the cors-* annotations: router.lua answers
	// a preflight and its header filter adds the headers, with the same
	// switchyard.cors calls a server block's location makes.
	CORS *LuaRouteCORS `json:"cors,omitempty"`
	// Access are the location's allow and deny lines, as accessGroups
	// writes them in a server block and in its order (block-cidrs, the
	// deny lists, the allow list and "deny all"), and "satisfy any" where
	// set: router.lua decides on them as NGINX's access module would.
	Access []string `json:"access,omitempty"`
}

// LuaRouteCORS is a location's CORS policy as switchyard.cors takes it:
// the origins space-separated, the rest as the annotations gave them.
type LuaRouteCORS struct {
	Origins       string `json:"origins"`
	Methods       string `json:"methods"`
	Headers       string `json:"headers"`
	ExposeHeaders string `json:"expose_headers"`
	Credentials   bool   `json:"credentials"`
	MaxAge        int    `json:"max_age"`
}

// newLuaRouteCORS is f's CORS policy for a route, or nil.
func newLuaRouteCORS(f *bus.Features) *LuaRouteCORS {
	if f == nil || f.CORS == nil {
		return nil
	}
	c := f.CORS
	return &LuaRouteCORS{Origins: strings.Join(c.Origins, " "), Methods: c.Methods, Headers: c.Headers,
		ExposeHeaders: c.ExposeHeaders, Credentials: c.Credentials, MaxAge: c.MaxAge}
}

// bodyLimit is an NGINX size in bytes; "0" is no limit.
func bodyLimit(size string) (int64, error) {
	if size == "0" {
		return 0, nil
	}
	return bus.ParseSize(size)
}

// routeKey is the renderer table's key of host's route.
func routeKey(host string) string { return bus.Key(bus.KindRoute, host) }

// dynamicServer says whether the server v was resolved from can be routed
// in Lua, and if not, why. It allows exactly what router.lua does: host
// names, exact or one-label wildcards; locations that proxy to the Lua balancer (with canaries,
// balancing and affinity, which live in the backends) or answer 404; the
// labels, ssl-redirect, force-ssl-redirect, preserve-trailing-slash and
// HSTS, app-root, x-forwarded-prefix, the default-backend annotation,
// CORS, source ranges (routedAccess), and of the proxy annotations those
// routedProxy allows.
// Anything else a server or location would write is a directive, and the
// host keeps its server block.
func dynamicServer(cfg Config, settings bus.Settings, v serverView, s *bus.Server) (bool, string) {
	host := s.Hostname
	switch {
	case !cfg.LuaRouting:
		return false, "lua routing is off"
	case host == bus.DefaultServerName || !hostPattern.MatchString(host):
		// A wildcard ("*.example.com", one label) is routed too: router.lua
		// tries the exact name first, then the wildcard of its parent.
		return false, "not a host name"
	case len(s.Aliases) > 0:
		return false, "server-alias"
	case s.SSLPassthrough:
		return false, "ssl-passthrough"
	case settings.EnableModSecurity:
		// The catch-all runs the ConfigMap's ModSecurity: a host that
		// turns it off, or adds rules, needs a server of its own.
		return false, "enable-modsecurity"
	case settings.SSLRejectHandshake:
		// The catch-all refuses handshakes for names without a server.
		return false, "ssl-reject-handshake"
	}
	rest := v
	rest.HeaderSource, rest.ServerName, rest.Listens, rest.Locations, rest.Blocks = "", "", nil, nil, nil
	rest.RouterBodyLimit, rest.locations = 0, nil
	if !reflect.ValueOf(rest).IsZero() {
		return false, "server-level settings"
	}
	for i, l := range v.Locations {
		if !routedKind(l.Kind, v.locations[i].Features) {
			return false, fmt.Sprintf("location %s: %s", l.Arg, l.Kind)
		}
		if !routedProxy(settings, v.locations[i].Features) {
			return false, fmt.Sprintf("location %s: proxy annotations that need directives", l.Arg)
		}
		if !routedAccess(l) {
			return false, fmt.Sprintf("location %s: access lines that need directives", l.Arg)
		}
		rest := l
		rest.Proxy, rest.CORS = nil, nil
		rest.Access, rest.AccessEnd = nil, ""
		rest.Source, rest.Arg, rest.Kind, rest.Upstream, rest.Labels = "", "", "", "", labelsView{}
		rest.IngressArgs, rest.BalancerArg, rest.Return = "", "", ""
		rest.Rewrite.AppRoot, rest.Rewrite.XForwardedPrefix = "", ""
		if routedRewrite(v.locations[i]) {
			rest.Rewrite.Regex, rest.Rewrite.Target = "", ""
		}
		// add-headers are written only next to a location's own headers.
		rest.GlobalHeaders = nil
		if !reflect.ValueOf(rest).IsZero() {
			return false, fmt.Sprintf("location %s: needs directives", l.Arg)
		}
	}
	return true, ""
}

// luaRedirectCodes are the redirect codes ngx.redirect sends as NGINX's
// "return" does (a Location and the standard page). NGINX answers
// "return 300 URL" with the URL as the body instead: those stay
// directives.
var luaRedirectCodes = map[int]bool{301: true, 302: true, 303: true, 307: true, 308: true}

// routedKind says whether router.lua does what a location of kind does:
// proxy, answer 404, or redirect with one of luaRedirectCodes.
func routedKind(kind locationKind, f *bus.Features) bool {
	switch kind {
	case kindProxy, kindNotFound:
		return true
	case kindRedirect:
		return luaRedirectCodes[f.Redirect.Code]
	}
	return false
}

// routedAccess says whether router.lua decides l's access lines as NGINX
// would: every "allow" and "deny" of a CIDR or "all", which it checks in
// order as the access module does (first match decides), with the
// fail-closed "deny all" among them; and "satisfy any" only without auth,
// where no other check of the location could let in a client the lines
// keep out (auth keeps its server block anyway). A line of 255.255.255.255
// keeps the block too: NGINX refuses that address (its parser's error
// value), and the refusal, not router.lua, decides what such a location
// answers.
func routedAccess(l locationView) bool {
	for _, g := range l.Access {
		for _, line := range g.Lines {
			verb, arg, _ := strings.Cut(line, " ")
			switch {
			case line == satisfyAny:
				if l.Auth != nil {
					return false
				}
			case verb != "allow" && verb != "deny", strings.HasPrefix(arg, "255.255.255.255/"):
				return false
			}
		}
	}
	return true
}

// routeAccess are a location's access lines for its route, in order.
func routeAccess(groups []accessGroup) []string {
	var lines []string
	for _, g := range groups {
		lines = append(lines, g.Lines...)
	}
	return lines
}

// routedRewrite says whether router.lua does l's rewrite-target as NGINX's
// "rewrite REGEX TARGET break" would: a target that is a path ("/..."),
// without "?". Then NGINX copies the captures verbatim (it escapes them
// only in a query or a redirect), an unset group as nothing, and keeps the
// request's arguments; router.lua does the same with ngx.req.set_uri. A
// target with a query (whose captures NGINX escapes depending on the
// request) or one that is not a path stays a directive.
func routedRewrite(l location) bool {
	if l.RewriteRegex == "" {
		return true
	}
	target := l.Features.Rewrite.Target
	return strings.HasPrefix(target, "/") && !strings.Contains(target, "?")
}

// routedProxy says whether router.lua applies every proxy annotation of f:
// the timeouts (through ngx.balancer.set_timeouts), upstream-vhost,
// connection-proxy-header and a proxy-body-size routedBodyLimit accepts.
// The others are directives.
func routedProxy(settings bus.Settings, f *bus.Features) bool {
	if f == nil || f.Proxy == nil {
		return true
	}
	if _, ok := routedBodyLimit(settings, f.Proxy.BodySize); !ok {
		return false
	}
	p := *f.Proxy
	p.ConnectTimeout, p.SendTimeout, p.ReadTimeout = 0, 0, 0
	p.UpstreamVhost, p.ConnectionHeader, p.BodySize = "", "", ""
	return reflect.ValueOf(p).IsZero()
}

// routedBodyLimit is the body limit router.lua checks for a location's
// proxy-body-size (size): 0 when it is not set or is the shared limit,
// which the router location's client_max_body_size enforces already.
// router.lua can enforce only a lower one: it checks Content-Length, and
// reads a body without one (chunked) before it checks its size, as NGINX
// does with request buffering on. Not ok (a server block) when the limit
// is above the shared one, which NGINX applies to chunked bodies as it
// reads them, or when proxy-request-buffering is off, where the body
// would stream upstream before its size is known.
func routedBodyLimit(settings bus.Settings, size string) (int64, bool) {
	if size == "" {
		return 0, true
	}
	limit, err := bodyLimit(size)
	shared, sharedErr := bodyLimit(settings.ProxyBodySize)
	switch {
	case err != nil || sharedErr != nil:
		return 0, false
	case limit == shared:
		return 0, true
	case limit == 0 || (shared != 0 && limit > shared):
		return 0, false
	case settings.ProxyRequestBuffering == "off":
		return 0, false
	}
	return limit, true
}

// newLuaRoute is the route of server s, which dynamicServer accepted, from
// the locations its view v was resolved from.
func newLuaRoute(settings bus.Settings, s *bus.Server, v serverView) *LuaRoute {
	route := &LuaRoute{Host: s.Hostname}
	for i, l := range v.locations {
		rl := LuaRouteLocation{Match: strings.TrimSpace(l.Modifier), Path: l.Path, Kind: string(v.Locations[i].Kind),
			Upstream: l.Backend}
		switch v.Locations[i].Kind {
		case kindNotFound:
			rl.Upstream = bus.DefaultBackendName
		case kindRedirect:
			rl.RedirectURL, rl.RedirectCode = l.Features.Redirect.URL, l.Features.Redirect.Code
		default:
			rl.Backend = l.Backend
			if l.Canary != nil {
				rl.CanaryBackend, rl.CanaryIngress = l.Canary.Backend, l.Canary.Ingress
			}
			rl.Fallback = fallbackBackend(l)
		}
		rl.SSLRedirect, rl.ForceSSLRedirect, rl.PreserveTrailingSlash = redirectChoices(settings, l.Features, l.Path)
		if l.Ingress != "" {
			rl.Namespace, rl.IngressName, _ = strings.Cut(l.Ingress, "/")
			rl.Service, rl.ServicePort, rl.LocationPath = l.labels.service, l.labels.servicePort, l.labels.path
		}
		if f := l.Features; f != nil && f.Rewrite != nil {
			rl.AppRoot, rl.XForwardedPrefix = f.Rewrite.AppRoot, f.Rewrite.XForwardedPrefix
		}
		if l.RewriteRegex != "" {
			// As rewriteRegex writes it in a server block.
			rl.RewriteRegex, rl.RewriteTarget = "(?i)"+l.RewriteRegex, l.Features.Rewrite.Target
		}
		if f := l.Features; f != nil && f.Proxy != nil {
			p := f.Proxy
			rl.ConnectTimeout, rl.SendTimeout, rl.ReadTimeout = p.ConnectTimeout, p.SendTimeout, p.ReadTimeout
			rl.UpstreamVhost, rl.ConnectionHeader = p.UpstreamVhost, p.ConnectionHeader
			rl.BodyLimit, _ = routedBodyLimit(settings, p.BodySize)
		}
		rl.CORS = newLuaRouteCORS(l.Features)
		rl.Access = routeAccess(v.Locations[i].Access)
		route.Locations = append(route.Locations, rl)
	}
	return route
}

// maxRouteBytes bounds a route: one bus message, with room for its
// headers. A host with more paths than fit keeps its server block, whose
// file the bus carries in parts.
const maxRouteBytes = bus.MaxPayload * 3 / 4

// encode is the route's JSON, which router.lua reads.
func (route *LuaRoute) encode() []byte {
	if route.data == nil {
		route.data, _ = json.Marshal(route) // strings and bools: cannot fail
	}
	return route.data
}

func (route *LuaRoute) size() int { return len(route.encode()) }

// putRoute publishes host's route, and dropRoute withdraws it.
func (r *Renderer) putRoute(key string, route *LuaRoute, out *bus.Output) {
	data := route.encode()
	setSize(r.sizes.routes, &r.sizes.routeTotal, route.Host, len(data))
	r.routed[key] = route.Host
	r.out.Routes[route.Host] = route
	out.Puts[routeKey(route.Host)] = data
}

func (r *Renderer) dropRoute(key string, out *bus.Output) {
	host, ok := r.routed[key]
	if !ok {
		return
	}
	delete(r.routed, key)
	delete(r.out.Routes, host)
	setSize(r.sizes.routes, &r.sizes.routeTotal, host, 0)
	out.Deletes = append(out.Deletes, routeKey(host))
}

// catchAllOwnsTLS says whether the catch-all server has TLS settings of its
// own (auth-tls-*, ssl-ciphers of an Ingress without a host): NGINX would
// apply them to the handshakes of every Lua-routed host, so while it has
// them, no host is routed in Lua.
func (r *Renderer) catchAllOwnsTLS() bool {
	key, ok := r.hosts[bus.DefaultServerName]
	s := r.servers[key]
	return ok && s != nil && (s.ClientAuth != nil || s.SSLCiphers != "" || s.SSLPreferServerCiphers != nil)
}

// coveredByWildcard says whether a wildcard server takes host's requests
// before the catch-all could: NGINX picks "*.example.com" over the
// default server for a.example.com, so a.example.com needs its own block.
func (r *Renderer) coveredByWildcard(host string) bool {
	if strings.HasPrefix(host, "*.") {
		return false // a wildcard matches one label: never its own parent's
	}
	_, rest, ok := strings.Cut(host, ".")
	return ok && r.hostExists("*."+rest)
}

// markCovered re-renders the hosts a wildcard host covers when it comes or
// goes: they move between Lua and server blocks.
func (r *Renderer) markCovered(wildcard string) {
	suffix, ok := strings.CutPrefix(wildcard, "*")
	if !ok || !r.cfg.LuaRouting {
		return
	}
	for host, key := range r.hosts {
		if strings.HasSuffix(host, suffix) && !strings.Contains(strings.TrimSuffix(host, suffix), ".") {
			r.dirty.servers[key] = true
		}
	}
}
