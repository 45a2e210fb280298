package renderer

// The views server.conf.tmpl and auth.tmpl print. Everything a location
// writes is decided here, in Go, and table-tested (view_test.go): what the
// location does with a request (its kind), every user-derived value already
// checked against its whole-string pattern and quoted (quote, locationArg,
// luaString, rewriteTarget…), the burst, the attribution comments. The
// templates only print; a new feature adds a field here and a line there.

import (
	"fmt"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// locationKind is what a location does with a request once auth, rate
// limits and headers are done. The template writes one block per kind.
type locationKind string

const (
	// kindDeny: an annotation that must hold cannot; the location fails
	// closed with Return's status.
	kindDeny locationKind = "deny"
	// kindRedirect: permanent-redirect or temporal-redirect.
	kindRedirect locationKind = "redirect"
	// kindExternal: proxied to an ExternalName Service NGINX resolves.
	kindExternal locationKind = "external"
	// kindProxy: proxied to the Lua balancer's endpoints of Backend.
	kindProxy locationKind = "proxy"
	// kindNotFound: no backend; ingress.lua still runs (ssl-redirect), then 404.
	kindNotFound locationKind = "not-found"
)

// serverView is what server.conf.tmpl sees: one server, resolved.
type serverView struct {
	// HeaderSource attributes the server's own lines to the Ingress of
	// its first location.
	HeaderSource string
	ServerName   string   // server_name's argument, quoted or a regex
	Listens      []string // listen's arguments, "127.0.0.1:8443 ssl http2"
	// RejectHandshakeSource is set (to its attribution) on the catch-all
	// server when ssl-reject-handshake is on: a TLS handshake for a name
	// no server has is refused.
	RejectHandshakeSource string
	// Errors is set when the server or one of its locations intercepts
	// custom-http-errors (errors.go).
	Errors    *serverErrorsView
	Locations []locationView
	// WWW is the from-to-www-redirect server, when there is one.
	WWW *wwwView
	// SSLCiphers (quoted) and SSLPreferServerCiphers ("on", "off") are
	// the server's own, "" for the http block's; SSLSource attributes
	// them to the Ingress that set them.
	SSLCiphers, SSLPreferServerCiphers, SSLSource string
	// ClientAuth is the server's mutual TLS (clientauth.go), or nil.
	ClientAuth *clientAuthView
	// ModSecurity is the ConfigMap's enable-modsecurity (modsecurity.go),
	// or nil.
	ModSecurity *modSecurityView
	// Blocks are the ConfigMap's block-user-agents and block-referers
	// checks: a request that matches gets 403 (access.go).
	Blocks []blockView
	// Router is set on the catch-all server with --lua-routing: it sends
	// the requests of Lua-routed hosts to router.lua (routes.go).
	// RouterBodyLimit is proxy-body-size in bytes (0: none), which router.lua
	// checks: NGINX checks client_max_body_size when it chooses a location,
	// which a named location skips.
	Router          bool
	RouterBodyLimit int64
	// locations are what Locations were resolved from, in their order:
	// a Lua route is made of them (newLuaRoute). Not printed.
	locations []location
}

// wwwView is the server that redirects the www counterpart of a host.
type wwwView struct {
	Source string
	// Host redirects to Target (both matched hostPattern).
	Host, Target string
	ServerName   string
	Listens      []string
	TargetLua    string // Target as a Lua literal
}

// locationView is what server.conf.tmpl sees of one location.
type locationView struct {
	Source string // attribution comment
	// Arg is location's argument: the modifier and the quoted path or
	// regex ("= \"/a\"", "~* \"^/a\"").
	Arg string
	// TestRefused is TestRefusedDirective for the hidden test option.
	TestRefused string
	Auth        *authView
	RateLimit   *rateLimitView
	Proxy       *proxyView // proxy.go
	// Backend is how the location reaches its backend (upstream.go).
	Backend *upstreamView
	// Access are the location's allow and deny lines (access.go), by
	// source; AccessEnd gives the lines after them back to the Ingress.
	Access          []accessGroup
	AccessEnd       string
	ResponseHeaders []headerView
	// AuthCookie passes the external auth service's Set-Cookie to the
	// client: "" without external auth, "success" on successful answers,
	// "always" (auth-always-set-cookie) on every answer.
	AuthCookie string
	// AccessLogOff and RewriteLog are enable-access-log: false and
	// enable-rewrite-log: true. DefaultBackendLogOff turns the log off
	// too: the catch-all's own default location while
	// enable-access-log-for-default-backend is off, as in ingress-nginx.
	AccessLogOff, RewriteLog, DefaultBackendLogOff bool
	// GlobalHeaders are add-headers, repeated where ResponseHeaders are
	// written (a location's add_header hides the inherited ones).
	GlobalHeaders []headerView
	Kind          locationKind
	// Upstream is $proxy_upstream_name's value, quoted.
	Upstream string
	// Errors are the location's custom errors (proxy, external).
	Errors *locationErrorsView
	// Return is the return directive's arguments (deny, redirect).
	Return string
	// External is the ExternalName target "host:port", quoted.
	External string
	// Rewrite is the rewrite module's part (external, proxy, not-found).
	Rewrite rewriteView
	// Labels are the variables the location sets for the metrics and the
	// error backend (metrics.go).
	Labels labelsView
	// CORS is the location's CORS policy for Lua (cors.go), or nil.
	CORS *corsView
	// Tracing is $switchyard_otel's quoted value, "" for none (tracing.go).
	Tracing string
	// Mirror is the location's mirror (mirror.go), or nil.
	Mirror *mirrorView
	// ModSecurity is the location's ModSecurity (modsecurity.go), or nil.
	ModSecurity *modSecurityView
	// IngressArgs are switchyard.ingress.rewrite's arguments (luaLocation);
	// BalancerArg the backend's name as a Lua literal (proxy).
	IngressArgs, BalancerArg string
}

// headerView is one add_header, name and value quoted.
type headerView struct{ Name, Value string }

// rewriteView is a location's app-root, x-forwarded-prefix and
// rewrite-target, each quoted, "" when not set.
type rewriteView struct {
	AppRoot, XForwardedPrefix string
	// Regex and Target are the rewrite directive's arguments.
	Regex, Target string
}

// rateLimitView is a location's limit-* directives.
type rateLimitView struct {
	// ConnZone is set with limit-connections: limit_conn's zone.
	ConnZone    string
	Connections int
	Requests    []limitReqView
	RateAfterKB int
	RateKB      int
}

// limitReqView is one limit_req: its zone and burst (0: none).
type limitReqView struct {
	Zone  string
	Burst int
}

// newServerView resolves server s for server.conf.tmpl.
func newServerView(cfg Config, settings bus.Settings, s *bus.Server, backends backendContext, src sources) (serverView, error) {
	if s.Hostname != bus.DefaultServerName && !hostPattern.MatchString(s.Hostname) {
		return serverView{}, fmt.Errorf("invalid host name %q", s.Hostname)
	}
	if src.ingress == nil {
		src.ingress = func(string) string { return sourceSwitchyard }
	}
	view := serverView{HeaderSource: sourceSwitchyard}
	if len(s.Locations) > 0 && s.Locations[0].Ingress != "" {
		view.HeaderSource = src.ingress(s.Locations[0].Ingress)
	}
	var err error
	if view.ServerName, err = serverName(s.Hostname); err != nil {
		return serverView{}, err
	}
	if err := view.addServerFeatures(s, src); err != nil {
		return serverView{}, err
	}
	if view.ClientAuth, err = newClientAuthView(s, src); err != nil {
		return serverView{}, err
	}
	if cfg.ModSecurity.Unavailable == "" && usesModSecurity(s, settings) {
		if view.ModSecurity, err = newServerModSecurity(cfg.ModSecurity, settings); err != nil {
			return serverView{}, err
		}
		if view.ModSecurity != nil {
			view.ModSecurity.Source = src.configMapSource("enable-modsecurity")
		}
	}
	view.Listens = listens(cfg, settings, s.Hostname == bus.DefaultServerName)
	view.Blocks = serverBlocks(settings.AccessSettings, src)
	if view.Router = cfg.LuaRouting && s.Hostname == bus.DefaultServerName; view.Router {
		if view.RouterBodyLimit, err = bodyLimit(settings.ProxyBodySize); err != nil {
			return serverView{}, err
		}
	}
	if s.Hostname == bus.DefaultServerName && settings.SSLRejectHandshake {
		view.RejectHandshakeSource = src.configMapSource("ssl-reject-handshake")
	}
	pages := errorPages{}
	serverPages, err := serverErrorPages(settings, backends, pages)
	if err != nil {
		return serverView{}, err
	}
	locations, err := nginxLocations(s.Locations)
	if err != nil {
		return serverView{}, err
	}
	view.locations = locations
	c := locationContext{cfg: cfg, settings: settings, host: s.Hostname, backends: backends, src: src,
		pages: pages, serverWideErrors: len(serverPages) > 0}
	for i, l := range locations {
		v, err := newLocationView(i, l, c)
		if err != nil {
			return serverView{}, err
		}
		view.Locations = append(view.Locations, v)
	}
	if len(pages) > 0 {
		view.Errors = &serverErrorsView{Source: src.configMapSource("custom-http-errors"), Pages: serverPages, Locations: pages.sorted()}
	}
	if view.WWW, err = newWWWView(cfg, settings, s, backends, src); err != nil {
		return serverView{}, err
	}
	return view, nil
}

// listens are a server's listen arguments; the catch-all is the
// default_server. With --enable-ssl-passthrough the TLS listener is the
// internal unix socket the stream module hands terminated hosts to, with
// the PROXY header that carries the client's address.
func listens(cfg Config, settings bus.Settings, defaultServer bool) []string {
	suffix := ""
	if defaultServer {
		suffix = " default_server"
	}
	reuse := ""
	if defaultServer && settings.ReusePort {
		// reuse-port: one listen per address may say it, the default
		// server's, and it holds for every server on the address.
		reuse = " reuseport"
	}
	proxyProtocol := ""
	if settings.UseProxyProtocol {
		// use-proxy-protocol: NGINX ORs this flag over every listen of an
		// address, so each says it and none can be left without it.
		proxyProtocol = " proxy_protocol"
	}
	// The addresses and sockets are the applier's: it fills them in.
	out := []string{bus.ListenPlaceholder(bus.PlaceholderHTTPAddr, settings.DisableIPv6) + proxyProtocol + suffix + reuse}
	ssl := " ssl"
	if settings.UseHTTP2 {
		ssl += " http2"
	}
	if cfg.SSLPassthrough {
		return append(out, "unix:"+bus.PlaceholderTLSSocket+ssl+" proxy_protocol"+suffix)
	}
	return append(out, bus.ListenPlaceholder(bus.PlaceholderHTTPSAddr, settings.DisableIPv6)+ssl+proxyProtocol+suffix+reuse)
}

// newWWWView is the from-to-www-redirect server of s, or nil.
func newWWWView(cfg Config, settings bus.Settings, s *bus.Server, backends backendContext, src sources) (*wwwView, error) {
	host := wwwRedirect(s, backends.hostExists)
	if host == "" {
		return nil, nil
	}
	v := &wwwView{Source: sourceSwitchyard, Host: host, Target: s.Hostname, Listens: listens(cfg, settings, false)}
	if asker := wwwAsker(s); asker != "" {
		v.Source = src.ingress(asker)
	}
	var err error
	if v.ServerName, err = serverName(host); err != nil {
		return nil, err
	}
	if v.TargetLua, err = luaString(s.Hostname); err != nil {
		return nil, err
	}
	return v, nil
}

// locationContext is what resolving a location needs of its server.
type locationContext struct {
	cfg      Config
	settings bus.Settings
	host     string
	backends backendContext
	src      sources
	// pages collects the server's named error locations; serverWideErrors
	// says the ConfigMap's custom-http-errors apply to its locations.
	pages            errorPages
	serverWideErrors bool
}

// newLocationView resolves the location at index i of its server. The
// features were validated (checkLocation); every value is still checked
// again, and quoted, by the function that writes it.
func newLocationView(i int, l location, c locationContext) (locationView, error) {
	v := locationView{Source: c.src.ingress(l.Ingress)}
	if l.Ingress != "" {
		l.Features = withGlobalAuth(l.Features, l.Path, c.settings)
	}
	if c.src.testRefuse[l.Ingress] {
		v.TestRefused = TestRefusedDirective
	}
	path, err := locationArg(l.Path)
	if err != nil {
		return locationView{}, err
	}
	v.Arg = l.Modifier + path
	if v.Labels, err = newLabelsView(l.Ingress, l.labels); err != nil {
		return locationView{}, fmt.Errorf("location %q: %w", l.Path, err)
	}
	if v.Auth, err = authFor(i, l, c.host, c.settings); err != nil {
		return locationView{}, err
	}
	if l.Features != nil && l.Features.RateLimit != nil {
		v.RateLimit = newRateLimitView(zoneKeyID(l.RateLimitID, c.settings.LimitConnZoneVariable), l.Features.RateLimit)
	}
	if v.Proxy, err = newProxyView(l.Features, c.settings, v.RateLimit != nil && v.RateLimit.RateKB > 0); err != nil {
		return locationView{}, err
	}
	if v.Backend, err = newUpstreamView(l.Features, c.settings); err != nil {
		return locationView{}, err
	}
	if v.Access, err = accessGroups(l.Features, c.settings.AccessSettings, c.src); err != nil {
		return locationView{}, err
	}
	if v.CORS, err = newCORSView(l.Features); err != nil {
		return locationView{}, err
	}
	if v.Tracing, err = locationTracing(l.Features); err != nil {
		return locationView{}, fmt.Errorf("location %q: %w", l.Path, err)
	}
	if v.Mirror, err = newMirrorView(i, l.Features); err != nil {
		return locationView{}, err
	}
	if l.Ingress != "" && c.cfg.ModSecurity.Unavailable == "" {
		if v.ModSecurity, err = newLocationModSecurity(c.cfg.ModSecurity, l.Features, c.settings); err != nil {
			return locationView{}, fmt.Errorf("location %q: %w", l.Path, err)
		}
	}
	v.AccessEnd = attributeAccess(v.Access, v.Source)
	if l.Features != nil && l.Features.Logs != nil {
		v.AccessLogOff, v.RewriteLog = l.Features.Logs.AccessLogOff, l.Features.Logs.RewriteLog
	}
	// No Ingress asked for the catch-all's default location: it answers
	// what no rule matches (ingress-nginx's default backend). The
	// Lua-routed hosts it serves go through @switchyard_router instead.
	v.DefaultBackendLogOff = c.host == bus.DefaultServerName && l.Ingress == "" && !c.settings.EnableAccessLogForDefaultBackend
	if v.GlobalHeaders, err = headerViews(c.settings.AddHeaderValues); err != nil {
		return locationView{}, err
	}
	if v.ResponseHeaders, err = responseHeaders(l.Features); err != nil {
		return locationView{}, err
	}
	if v.Auth != nil && v.Auth.External != nil {
		v.AuthCookie = "success"
		if l.Features.Auth.External.AlwaysSetCookie {
			v.AuthCookie = "always"
		}
	}
	external := proxiedExternal(l.Backend, c)
	v.Kind = kindOf(l, external)
	if err := v.resolveKind(l, external, c); err != nil {
		return locationView{}, err
	}
	return v, nil
}

// proxiedExternal is the ExternalName target of backend, or "" when it is
// not one, or when there is no resolver to ask or the target is one we
// will not write: the Lua balancer then finds no endpoints and answers 503.
func proxiedExternal(backend string, c locationContext) string {
	target, ok := c.backends.external[backend]
	if !ok || !externalPattern.MatchString(target) || len(c.cfg.Resolvers) == 0 {
		return ""
	}
	return target
}

// kindOf decides what the location does; the first that applies wins:
// a Deny, then a redirect, an ExternalName target, a backend, nothing.
func kindOf(l location, external string) locationKind {
	f := l.Features
	switch {
	case f != nil && f.Deny != nil:
		return kindDeny
	case f != nil && f.Redirect != nil && f.Redirect.URL != "":
		return kindRedirect
	case external != "":
		return kindExternal
	case l.Backend != "":
		return kindProxy
	default:
		return kindNotFound
	}
}

// resolveKind fills in what the location's kind writes, and nothing else:
// a value a kind does not write is never checked.
func (v *locationView) resolveKind(l location, external string, c locationContext) error {
	backend := l.Backend
	if v.Kind == kindNotFound {
		backend = bus.DefaultBackendName
	}
	var err error
	if v.Upstream, err = quote(backend); err != nil {
		return err
	}
	switch v.Kind {
	case kindDeny:
		v.Return = strconv.Itoa(l.Features.Deny.Status)
		return nil
	case kindRedirect:
		url, err := quote(l.Features.Redirect.URL)
		v.Return = strconv.Itoa(l.Features.Redirect.Code) + " " + url
		return err
	case kindExternal:
		if v.External, err = quote(external); err != nil {
			return err
		}
		if v.Errors, err = errorsOf(l, c.serverWideErrors, c.settings, c.backends, c.pages); err != nil {
			return err
		}
	case kindProxy:
		if v.Errors, err = errorsOf(l, c.serverWideErrors, c.settings, c.backends, c.pages); err != nil {
			return err
		}
		if v.BalancerArg, err = balancerArgs(l, v.Errors != nil, c.host); err != nil {
			return err
		}
	}
	if v.Rewrite, err = newRewriteView(l); err != nil {
		return err
	}
	v.IngressArgs, err = luaLocation(c.settings, l.Features, l.Path, c.host)
	return err
}

// balancerArgs are the Lua arguments of the balancer's rewrite hook: the
// location's backend and, when a canary Ingress was declared for its host
// and path, the canary's backend and Ingress, whose policy Lua takes from
// the canary backend's canaryPolicies. A location without one never goes
// to a canary, whatever other hosts declared for the same Service. Then,
// when set, the default-backend annotation's backend (it serves while the
// location's has no endpoint), and true when custom errors need
// $service_name and $service_port. Then the timeouts, which only a
// Lua-routed location has (nil here), and the metrics' labels (luaLabels)
// of a location on host. Trailing nils are left out.
func balancerArgs(l location, tagService bool, host string) (string, error) {
	args := []string{"nil", "nil", "nil", "nil", "nil", "nil", "nil", "nil"}
	var err error
	if args[0], err = luaString(l.Backend); err != nil {
		return "", err
	}
	if l.Canary != nil {
		if !backendNamePattern.MatchString(l.Canary.Backend) || !ingressIDPattern.MatchString(l.Canary.Ingress) {
			return "", fmt.Errorf("location %q: invalid canary %q of %q", l.Path, l.Canary.Backend, l.Canary.Ingress)
		}
		args[1], args[2] = `"`+l.Canary.Backend+`"`, `"`+l.Canary.Ingress+`"`
	}
	if fb := fallbackBackend(l); fb != "" {
		if !backendNamePattern.MatchString(fb) {
			return "", fmt.Errorf("location %q: invalid default backend %q", l.Path, fb)
		}
		args[3] = `"` + fb + `"`
	}
	if tagService {
		args[4] = "true"
	}
	if args[6], args[7], err = luaLabels(l.Ingress, l.labels, host); err != nil {
		return "", err
	}
	for len(args) > 1 && args[len(args)-1] == "nil" {
		args = args[:len(args)-1]
	}
	return strings.Join(args, ", "), nil
}

// newRewriteView resolves app-root, x-forwarded-prefix and rewrite-target.
func newRewriteView(l location) (rewriteView, error) {
	var v rewriteView
	var err error
	if rw := rewriteOf(l.Features); rw != nil {
		if v.AppRoot, err = quoteSet(rw.AppRoot); err != nil {
			return v, err
		}
		if v.XForwardedPrefix, err = quoteSet(rw.XForwardedPrefix); err != nil {
			return v, err
		}
	}
	if l.RewriteRegex == "" {
		return v, nil
	}
	if v.Regex, err = rewriteRegex(l.RewriteRegex); err != nil {
		return v, err
	}
	v.Target, err = rewriteTarget(l.Features.Rewrite.Target)
	return v, err
}

// quoteSet quotes s, or is "" when s is: a value that is not set writes
// no directive.
func quoteSet(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	return quote(s)
}

// responseHeaders are the location's add_header pairs, quoted.
func responseHeaders(f *bus.Features) ([]headerView, error) {
	if f == nil {
		return nil, nil
	}
	var out []headerView
	for _, h := range f.ResponseHeaders {
		name, err := quote(h.Name)
		if err != nil {
			return nil, err
		}
		value, err := quote(h.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, headerView{Name: name, Value: value})
	}
	return out, nil
}

// newRateLimitView resolves a location's limits; id names its zones, ""
// when it declares none (limit-rate alone).
func newRateLimitView(id string, rl *bus.RateLimit) *rateLimitView {
	v := &rateLimitView{RateAfterKB: rl.RateAfterKB, RateKB: rl.RateKB}
	if id == "" {
		return v
	}
	if rl.Connections != 0 {
		v.ConnZone, v.Connections = id+"_conn", rl.Connections
	}
	for _, r := range []struct {
		suffix string
		limit  int
	}{{"_rps", rl.RPS}, {"_rpm", rl.RPM}} {
		if r.limit != 0 {
			v.Requests = append(v.Requests, limitReqView{Zone: id + r.suffix, Burst: burst(r.limit, rl.BurstMultiplier)})
		}
	}
	return v
}
