package renderer

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/templates"
)

// TLS passthrough (ssl-passthrough with --enable-ssl-passthrough). NGINX's
// stream module owns the HTTPS addresses and reads each TLS connection's
// SNI name without terminating it: a passthrough host goes to a second
// stream server, which sends it to the endpoints of the host's "/"
// backend; every other name goes to the http module's TLS listener on an
// internal unix socket. Both internal hops carry a PROXY header, so the
// http module sees the client's address (realip from "unix:"); the second
// server reads and drops it, since a backend that terminates TLS itself
// would not understand one (ingress-nginx sends none either).
//
// Debian has no stream Lua module, but njs for the stream module: the
// passthrough hosts' endpoints are published as dynamic values
// (bus.KindPassthrough), which the applier keeps as one file per host,
// and templates/passthrough.js reads the host's file per connection. An
// endpoint change of a passthrough backend never reloads NGINX. Which
// hosts are passed through stays a map in StreamFile (a host added or
// removed reloads): deciding it in njs would cost every terminated TLS
// connection a script run (make bench: TestBenchPassthroughRouting).

// StreamFile is the stream block's passthrough configuration, included
// from nginx.conf when --enable-ssl-passthrough is on.
const StreamFile = "stream.d/passthrough.conf"

// PassthroughScript is templates/passthrough.js as StreamFile imports it:
// not a .conf, so the stream block's include leaves it alone.
const PassthroughScript = "stream.d/passthrough.js"

// streamModule is the dynamic module of NGINX's stream block (Debian's
// libnginx-mod-stream; ssl_preread and realip are built in).
const streamModule = "ngx_stream_module.so"

// StreamJSModule is njs's module for the stream block (Debian's
// libnginx-mod-stream-js), loaded only with --enable-ssl-passthrough.
const StreamJSModule = "ngx_stream_js_module.so"

// streamView is what stream.conf.tmpl sees.
type streamView struct {
	Static string
	Src    struct{ ProxyRealIPCIDR, ProxyProtocolHeaderTimeout string }
	// HeaderTimeout is proxy_protocol_timeout's seconds with
	// use-proxy-protocol (proxy-protocol-header-timeout), 0 otherwise.
	HeaderTimeout int
	// IdleTimeout is proxy_timeout of both stream servers, in seconds:
	// the longest proxy timeout there is (features.MaxProxyTimeout).
	IdleTimeout int
	// Listens are the public HTTPS addresses, with proxy_protocol when
	// use-proxy-protocol is on; TrustedProxies are then
	// proxy-real-ip-cidr.
	Listens        []string
	TrustedProxies []string
	// TLSSocket and PassthroughSocket are the upstream servers of the two
	// routes ("unix:..."); PassthroughListen is the second server's listen.
	TLSSocket, PassthroughSocket, PassthroughListen string
	// Script is PassthroughScript and Dir the endpoints directory's
	// placeholder, both quoted.
	Script, Dir string
	Hosts       []streamHost
}

// streamHost is one passthrough host: its quoted SNI name and the
// attribution of the Ingress that asked.
type streamHost struct {
	Source, Name string
}

// passthroughWarning is a passthrough host the stream file serves, but
// not as asked (no endpoint): logged as a warning, not as left out.
type passthroughWarning struct{ error }

// renderStream renders StreamFile from the passthrough servers, with the
// endpoints of each host it passes through, by host. A host that cannot be
// written is left out (its TLS is terminated) and reported.
func (r *Renderer) renderStream() (string, map[string]*bus.PassthroughEndpoints, []error) {
	v, endpoints, errs := r.newStreamView()
	text, err := execute("stream.conf.tmpl", v)
	if err != nil {
		return "", nil, append(errs, err)
	}
	return text, endpoints, errs
}

func (r *Renderer) newStreamView() (streamView, map[string]*bus.PassthroughEndpoints, []error) {
	s := r.effectiveSettings()
	v := streamView{Static: sourceSwitchyard, IdleTimeout: features.MaxProxyTimeout,
		Script: `"` + PassthroughScript + `"`, Dir: `"` + bus.PlaceholderPassthroughDir + `"`}
	// The sockets are the applier's: it fills in their paths.
	v.TLSSocket = `"unix:` + bus.PlaceholderTLSSocket + `"`
	v.PassthroughSocket = `"unix:` + bus.PlaceholderPassthroughSocket + `"`
	v.PassthroughListen = v.PassthroughSocket + " proxy_protocol"
	suffix := ""
	if s.UseProxyProtocol {
		suffix = " proxy_protocol"
		v.TrustedProxies = s.ProxyRealIPCIDR
		v.Src.ProxyRealIPCIDR = r.sources("").configMapSource("proxy-real-ip-cidr")
		v.HeaderTimeout = s.ProxyProtocolHeaderTimeout
		v.Src.ProxyProtocolHeaderTimeout = r.sources("").configMapSource("proxy-protocol-header-timeout")
	}
	if s.ReusePort {
		suffix += " reuseport"
	}
	v.Listens = []string{bus.ListenPlaceholder(bus.PlaceholderHTTPSAddr, s.DisableIPv6) + suffix}
	var errs []error
	endpoints := map[string]*bus.PassthroughEndpoints{}
	for _, key := range slices.Sorted(maps.Keys(r.servers)) {
		srv := r.visibleServer(r.servers[key])
		if srv == nil || !srv.SSLPassthrough {
			continue
		}
		if _, refused := r.ref.excluded[srv.PassthroughFrom]; refused {
			// NGINX refused a line of the Ingress that asked: its host is
			// terminated until the Ingress changes.
			continue
		}
		h, eps, err := r.streamHost(key, srv)
		if err != nil {
			errs = append(errs, fmt.Errorf("ssl-passthrough of %s: %w; its TLS is terminated", srv.Hostname, err))
			continue
		}
		if len(eps) == 0 {
			errs = append(errs, passthroughWarning{fmt.Errorf("ssl-passthrough of %s: backend %s has no ready endpoint; its TLS connections are closed", srv.Hostname, srv.PassthroughBackend)})
		}
		v.Hosts = append(v.Hosts, h)
		endpoints[srv.Hostname] = &bus.PassthroughEndpoints{Host: srv.Hostname, Endpoints: eps}
	}
	return v, endpoints, errs
}

// streamHost checks one passthrough server and resolves its map entry and
// endpoints.
func (r *Renderer) streamHost(key string, srv *bus.Server) (streamHost, []string, error) {
	if !bus.ValidPassthroughHost(srv.Hostname) {
		return streamHost{}, nil, fmt.Errorf("only exact host names are passed through")
	}
	if !backendNamePattern.MatchString(srv.PassthroughBackend) {
		return streamHost{}, nil, fmt.Errorf("invalid backend name %q", srv.PassthroughBackend)
	}
	name, err := quote(srv.Hostname)
	if err != nil {
		return streamHost{}, nil, err
	}
	var eps []string
	if b := r.out.Backends[srv.PassthroughBackend]; b != nil {
		if eps, err = passthroughEndpoints(b.Endpoints); err != nil {
			return streamHost{}, nil, fmt.Errorf("backend %s: %w", b.Name, err)
		}
	}
	src := sourceSwitchyard
	if srv.PassthroughFrom != "" {
		src = r.ingressSource(srv.PassthroughFrom, key)
	}
	return streamHost{Source: src, Name: name}, eps, nil
}

// passthroughEndpoints writes endpoints as "ip:port" ("[ip6]:port"),
// sorted and without duplicates; each address must parse as an IP and
// each port be 1-65535. The results match bus.PassthroughEndpointPattern,
// so they need no escaping where they are quoted.
func passthroughEndpoints(eps []bus.Endpoint) ([]string, error) {
	seen := map[string]bool{}
	for _, ep := range eps {
		addr, err := netip.ParseAddr(ep.Address)
		if err != nil || addr.Zone() != "" {
			return nil, fmt.Errorf("endpoint address %q is not an IP address", ep.Address)
		}
		port, err := strconv.Atoi(ep.Port)
		if err != nil || port < 1 || port > 65535 || strconv.Itoa(port) != ep.Port {
			return nil, fmt.Errorf("endpoint port %q is not 1-65535", ep.Port)
		}
		seen[netip.AddrPortFrom(addr, uint16(port)).String()] = true
	}
	return slices.Sorted(maps.Keys(seen)), nil
}

// indexPassthrough adds or removes server key under its passthrough
// backend, so a backend change knows whether the stream file uses it.
func (r *Renderer) indexPassthrough(key string, s *bus.Server, add bool) {
	if s == nil || !s.SSLPassthrough {
		return
	}
	r.streamDirty = true
	users := r.passBackends[s.PassthroughBackend]
	if add {
		if users == nil {
			users = map[string]bool{}
			r.passBackends[s.PassthroughBackend] = users
		}
		users[key] = true
		return
	}
	delete(users, key)
	if len(users) == 0 {
		delete(r.passBackends, s.PassthroughBackend)
	}
}

// flushStream renders StreamFile again when a passthrough server, one of
// their backends or the settings changed, and publishes the endpoints of
// the hosts whose endpoints changed (the applier's files; no reload).
func (r *Renderer) flushStream(all bool, out *bus.Output, errs *[]error) {
	if !r.cfg.SSLPassthrough || (!all && !r.streamDirty) {
		return
	}
	r.streamDirty = false
	text, endpoints, problems := r.renderStream()
	*errs = append(*errs, problems...)
	if text == "" {
		return
	}
	r.files[StreamFile], r.files[PassthroughScript] = true, true
	putFile(out, StreamFile, text)
	putFile(out, PassthroughScript, templates.PassthroughJS)
	for host, eps := range endpoints {
		if old := r.out.Passthrough[host]; old == nil || !slices.Equal(old.Endpoints, eps.Endpoints) {
			out.Values[passthroughKey(host)] = eps
		}
	}
	for host := range r.out.Passthrough {
		if endpoints[host] == nil {
			out.Deletes = append(out.Deletes, passthroughKey(host))
		}
	}
	r.out.Passthrough = endpoints
}

func passthroughKey(host string) string { return bus.Key(bus.KindPassthrough, host) }
