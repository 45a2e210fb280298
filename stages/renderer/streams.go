package renderer

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"

	"switchyard.dev/switchyard/bus"
)

// TCP and UDP services (--tcp-services-configmap, --udp-services-configmap,
// bus/streams.go): one stream server per entry, listening on the entry's
// port at each host the HTTP listeners use, proxying to the endpoints of
// the entry's Service port. Debian has no stream Lua module, so the
// endpoints are written into ServicesFile: an endpoint change is a
// (coalesced) reload, which leaves established connections to the old
// workers.

// ServicesFile is the stream block's TCP and UDP services, included from
// nginx.conf when either ConfigMap is configured.
const ServicesFile = "stream.d/services.conf"

func init() {
	registerSettingFields(map[string]func(*bus.Settings) any{
		"proxy-stream-timeout":               func(s *bus.Settings) any { return &s.ProxyStreamTimeout },
		"proxy-stream-next-upstream":         func(s *bus.Settings) any { return &s.ProxyStreamNextUpstream },
		"proxy-stream-next-upstream-timeout": func(s *bus.Settings) any { return &s.ProxyStreamNextUpstreamTimeout },
		"proxy-stream-next-upstream-tries":   func(s *bus.Settings) any { return &s.ProxyStreamNextUpstreamTries },
		"proxy-stream-responses":             func(s *bus.Settings) any { return &s.ProxyStreamResponses },
	})
}

// servicesView is what stream_services.conf.tmpl sees.
type servicesView struct {
	Static string
	Src    struct {
		ProxyStreamTimeout, ProxyStreamNextUpstream, ProxyStreamNextUpstreamTimeout string
		ProxyStreamNextUpstreamTries, ProxyStreamResponses                          string
		ProxyRealIPCIDR, ProxyProtocolHeaderTimeout                                 string
	}
	// The proxy-stream-* keys, checked.
	Timeout, NextUpstream, NextUpstreamTimeout string
	NextUpstreamTries, Responses               int
	Upstreams                                  []streamUpstream
	Servers                                    []serviceServer
}

// serviceServer is one entry's stream server.
type serviceServer struct {
	Comment string // the entry: protocol, ConfigMap and port
	Source  string // its attribution (streams_refusals.go)
	Listens []string
	UDP     bool
	// HeaderTimeout and TrustedProxies are set when the listener decodes
	// the PROXY protocol (the first PROXY).
	HeaderTimeout     int
	TrustedProxies    []string
	Upstream          string
	SendProxyProtocol bool // the second PROXY
}

// streamTimePattern is an NGINX time as the translator checks it (one
// word of digits and units); checked again before it is written.
var streamTimePattern = regexp.MustCompile(`^[0-9]{1,9}[0-9msdhwMy]{0,40}$`)

// SetStreams replaces the TCP and UDP services; nil means none.
func (r *Renderer) SetStreams(s *bus.StreamServices) {
	r.streams = s
	r.servicesDirty = true
	r.ref.changed = true // a refused entry may have changed
}

// flushServices renders ServicesFile when the services or the settings
// changed. An entry that cannot be written is left out and reported.
func (r *Renderer) flushServices(all bool, out *bus.Output, errs *[]error) {
	if !r.cfg.StreamServices || (!all && !r.servicesDirty) {
		return
	}
	r.servicesDirty = false
	v, problems := r.newServicesView()
	*errs = append(*errs, problems...)
	text, err := execute("stream_services.conf.tmpl", v)
	if err != nil {
		*errs = append(*errs, fmt.Errorf("render %s: %w", ServicesFile, err))
		return
	}
	r.files[ServicesFile] = true
	putFile(out, ServicesFile, text)
}

func (r *Renderer) newServicesView() (servicesView, []error) {
	s := r.effectiveSettings()
	src := r.sources("")
	v := servicesView{Static: sourceSwitchyard, Timeout: "600s", NextUpstream: "off", NextUpstreamTimeout: "600s",
		NextUpstreamTries: s.ProxyStreamNextUpstreamTries, Responses: s.ProxyStreamResponses}
	v.Src.ProxyStreamTimeout = src.configMapSource("proxy-stream-timeout")
	v.Src.ProxyStreamNextUpstream = src.configMapSource("proxy-stream-next-upstream")
	v.Src.ProxyStreamNextUpstreamTimeout = src.configMapSource("proxy-stream-next-upstream-timeout")
	v.Src.ProxyStreamNextUpstreamTries = src.configMapSource("proxy-stream-next-upstream-tries")
	v.Src.ProxyStreamResponses = src.configMapSource("proxy-stream-responses")
	v.Src.ProxyRealIPCIDR = src.configMapSource("proxy-real-ip-cidr")
	v.Src.ProxyProtocolHeaderTimeout = src.configMapSource("proxy-protocol-header-timeout")
	var errs []error
	if streamTimePattern.MatchString(s.ProxyStreamTimeout) {
		v.Timeout = s.ProxyStreamTimeout
	} else {
		errs = append(errs, fmt.Errorf("proxy-stream-timeout %q is not an NGINX time; using 600s", s.ProxyStreamTimeout))
	}
	if streamTimePattern.MatchString(s.ProxyStreamNextUpstreamTimeout) {
		v.NextUpstreamTimeout = s.ProxyStreamNextUpstreamTimeout
	} else {
		errs = append(errs, fmt.Errorf("proxy-stream-next-upstream-timeout %q is not an NGINX time; using 600s", s.ProxyStreamNextUpstreamTimeout))
	}
	if s.ProxyStreamNextUpstream {
		v.NextUpstream = "on"
	}
	upstreams := map[string]streamUpstream{}
	if r.streams != nil {
		for _, p := range []struct {
			protocol string
			list     []bus.StreamService
		}{{bus.ProtocolTCP, r.streams.TCP}, {bus.ProtocolUDP, r.streams.UDP}} {
			for _, svc := range p.list {
				if _, refused := r.ref.excludedServices[serviceSourceName(p.protocol, svc.Port)]; refused {
					errs = append(errs, fmt.Errorf("%s service on port %d (ConfigMap %s, key %d): NGINX refused it (the applier's refusal says why, such as a port another process holds); it is not served until it changes or the port is free",
						p.protocol, svc.Port, svc.ConfigMap, svc.Port))
					continue
				}
				srv, u, err := r.serviceServer(p.protocol, svc, s)
				if err != nil {
					errs = append(errs, fmt.Errorf("%s service on port %d (ConfigMap %s): %w; it is not served", p.protocol, svc.Port, svc.ConfigMap, err))
					continue
				}
				upstreams[u.Name] = u
				v.Servers = append(v.Servers, srv)
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(upstreams)) {
		v.Upstreams = append(v.Upstreams, upstreams[name])
	}
	return v, errs
}

// serviceServer checks one entry and builds its server and upstream.
func (r *Renderer) serviceServer(protocol string, svc bus.StreamService, s bus.Settings) (serviceServer, streamUpstream, error) {
	if svc.Port < 1 || svc.Port > 65535 {
		return serviceServer{}, streamUpstream{}, fmt.Errorf("port %d is not 1-65535", svc.Port)
	}
	name := svc.UpstreamName(protocol)
	if !backendNamePattern.MatchString(name) || !bus.SourceNamePattern.MatchString(svc.ConfigMap) {
		return serviceServer{}, streamUpstream{}, fmt.Errorf("invalid Service or ConfigMap name")
	}
	quoted, err := quote(name)
	if err != nil {
		return serviceServer{}, streamUpstream{}, err
	}
	u := streamUpstream{Name: quoted}
	if u.Servers, err = streamServers(svc.Endpoints); err != nil {
		return serviceServer{}, streamUpstream{}, err
	}
	srv := serviceServer{Upstream: quoted, UDP: protocol == bus.ProtocolUDP, Source: serviceSource(protocol, svc),
		Comment: fmt.Sprintf("%s services ConfigMap %s, port %d: Service %s/%s port %s", protocol, svc.ConfigMap, svc.Port,
			svc.Service.Namespace, svc.Service.Name, svc.Service.Port)}
	suffix := ""
	if srv.UDP {
		suffix = " udp"
	} else if svc.ProxyProtocolDecode {
		suffix = " proxy_protocol"
		srv.HeaderTimeout = s.ProxyProtocolHeaderTimeout
		srv.TrustedProxies = s.ProxyRealIPCIDR
	}
	srv.SendProxyProtocol = !srv.UDP && svc.ProxyProtocolEncode
	if s.ReusePort {
		suffix += " reuseport"
	}
	// On every host the applier's HTTP listeners are on: it fills them in.
	srv.Listens = []string{bus.ListenPlaceholder(bus.PlaceholderHTTPHost, s.DisableIPv6) + ":" + strconv.Itoa(svc.Port) + suffix}
	return srv, u, nil
}

// streamUpstream is one stream upstream (a TCP or UDP service's), with its
// endpoints "ip:port", quoted and sorted.
type streamUpstream struct {
	Name    string
	Servers []string
}

// streamServers writes endpoints as streamUpstream's Servers:
// passthroughEndpoints, quoted.
func streamServers(eps []bus.Endpoint) ([]string, error) {
	servers, err := passthroughEndpoints(eps)
	for i, s := range servers {
		servers[i] = `"` + s + `"`
	}
	return servers, err
}
