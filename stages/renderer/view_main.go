package renderer

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// mainView is what nginx.conf.tmpl sees: every choice made and every
// quoted value written here, so the template only prints. Settings and
// Config are printed as they are where a value needs no decision (sizes,
// timeouts: the settings parser and the run flags checked them).
type mainView struct {
	Config   Config
	Settings bus.Settings
	// Refused are the "# refused" lines of the refusals this render honours.
	Refused []string
	// Src are the attribution comments of the lines written from
	// ConfigMap keys; Static the comment that ends an attributed part.
	Src    mainSources
	Static string
	// LoadModules are load_module's arguments, quoted.
	LoadModules []string
	// BrotliModule is the brotli filter's load_module argument, quoted,
	// or "" when enable-brotli is off.
	BrotliModule string
	// HTTP is the http{} part from bus.HTTPSettings (view_http.go).
	HTTP httpView
	// User is user's arguments, quoted, or "" to keep the master's user.
	User string
	// WorkerProcesses is the flag's value, or else the ConfigMap's (and
	// then Src.WorkerProcesses attributes it).
	WorkerProcesses string
	// HTTPSPort is the port ssl-redirect goes to (a Lua literal: the
	// applier fills in ":8443", or "" for 443). HSTS is the header's value
	// as a Lua literal.
	HTTPSPort, HSTS string
	// ControlSocket is the configuration endpoint's socket: the
	// applier's, which it fills in.
	ControlSocket string
	ServerTokens  string // "on" or "off"
	// Resolvers is resolver's server list and parameters, "" when there
	// is no server (resolverArgs); ResolverSrc attributes it.
	Resolvers, ResolverSrc string
	LogFormat              string // quoted
	AccessLog              string // "logs/access.log upstreaminfo" or "off"
	// LimitKey is limit-conn-zone-variable when it is not the default, for
	// the map to limitKeyVariable; "" otherwise.
	LimitKey string
	// LimitReqStatus and LimitConnStatus are written when they are error
	// statuses (400-599), 0 otherwise.
	LimitReqStatus, LimitConnStatus int
	SSLProtocols                    string
	SSLCiphers                      string // quoted
	// RealIPHeader is forwarded-for-header, quoted.
	RealIPHeader string
	// ForwardedHostVar is forwarded-host-header's variable, such as
	// $http_x_forwarded_host: $best_http_host with use-forwarded-headers.
	ForwardedHostVar string
	// Keepalive: upstream-keepalive-connections is on.
	Keepalive bool
	// ProxyHeaders decides the headers every location sends upstream.
	ProxyHeaders proxyHeadersView
	// ProxyLines and ClientLines are the http block's proxy and client
	// directives from the ConfigMap, each with its source (proxy.go).
	ProxyLines, ClientLines []sourcedLine
	// PlaceholderCert and PlaceholderKey are the http block's
	// ssl_certificate and ssl_certificate_key (ticketkey.go).
	PlaceholderCert, PlaceholderKey string
	// TLSLines are the http block's TLS directives (view_tls.go);
	// NginxLines its one-directive keys (view_nginx.go).
	TLSLines, NginxLines []sourcedLine
	// BlockMaps are the block-user-agents and block-referers maps the
	// servers check (access.go).
	BlockMaps []blockMapView
	// MultiAccept is events{} multi_accept: "on" or "off".
	MultiAccept string
	// DebugConnections are events{} debug_connection's addresses and
	// CIDRs (debug-connections), checked again.
	DebugConnections []string
	// SyslogErrorLog is the http block's second error_log target
	// (enable-syslog), "" for none.
	SyslogErrorLog string
	// ErrorLogFile is error-log-path quoted, the second error_log target
	// of the main context and the http block; "" for none.
	ErrorLogFile string
	// ErrorLogLevel is error_log's level; WorkerCPUAffinity
	// worker_cpu_affinity's arguments, "" for none. Both checked again.
	ErrorLogLevel, WorkerCPUAffinity string
	// MetricsInit is metrics.lua's init argument (the bucket flags), "" for
	// its defaults.
	MetricsInit string
	// RedirectCode is http-redirect-code, for ingress.lua.
	RedirectCode int
	// TracingInit is tracing.lua's init argument and TracingDictSize the
	// spans' dict, both "" when request tracing is off (tracing.go).
	TracingInit, TracingDictSize string
	// Passthrough is --enable-ssl-passthrough (passthrough.go);
	// ServerPort is then $switchyard_server_port, the port of the client's
	// connection also on the TLS listener's unix socket, else $server_port.
	Passthrough bool
	// Stream: the stream block is there, for passthrough or for the TCP
	// and UDP services (streams.go).
	Stream     bool
	StreamLog  streamLogView
	ServerPort string
	// WorkerConnections is worker_connections; WorkerOpenFiles is
	// worker_rlimit_nofile's, 0 when not written.
	WorkerConnections, WorkerOpenFiles int
}

// mainSources are the attribution comments of nginx.conf, one a line that
// is written from a ConfigMap key.
type mainSources struct {
	WorkerProcesses, WorkerShutdownTimeout, ServerTokens, ProxyRealIPCIDR string
	LogFormatUpstream, LimitReqStatusCode, LimitConnStatusCode            string
	LimitConnZoneVariable                                                 string
	SSLProtocols, SSLCiphers                                              string
	UpstreamKeepaliveConnections, UpstreamKeepaliveTimeout                string
	UpstreamKeepaliveRequests, UpstreamKeepaliveTime                      string
	MaxWorkerConnections, MaxWorkerOpenFiles                              string
	UseProxyProtocol, EnableMultiAccept                                   string
	EnableRealIP, ForwardedForHeader, ForwardedHostHeader                 string
	ErrorLogLevel, WorkerCPUAffinity, GenerateRequestID                   string
	DebugConnections, ErrorLogPath                                        string
}

func newMainSources(src sources) mainSources {
	s := src.configMapSource
	return mainSources{
		WorkerProcesses: s("worker-processes"), WorkerShutdownTimeout: s("worker-shutdown-timeout"),
		ServerTokens: s("server-tokens"), ProxyRealIPCIDR: s("proxy-real-ip-cidr"),
		UseProxyProtocol: s("use-proxy-protocol"), EnableMultiAccept: s("enable-multi-accept"),
		EnableRealIP: s("enable-real-ip"), ForwardedForHeader: s("forwarded-for-header"), ForwardedHostHeader: s("forwarded-host-header"),
		ErrorLogLevel: s("error-log-level"), ErrorLogPath: s("error-log-path"), DebugConnections: s("debug-connections"), WorkerCPUAffinity: s("worker-cpu-affinity"), GenerateRequestID: s("generate-request-id"),
		LogFormatUpstream: s("log-format-upstream"), LimitReqStatusCode: s("limit-req-status-code"),
		LimitConnStatusCode: s("limit-conn-status-code"), LimitConnZoneVariable: s("limit-conn-zone-variable"),
		SSLProtocols: s("ssl-protocols"), SSLCiphers: s("ssl-ciphers"),
		UpstreamKeepaliveConnections: s("upstream-keepalive-connections"),
		UpstreamKeepaliveTimeout:     s("upstream-keepalive-timeout"),
		UpstreamKeepaliveRequests:    s("upstream-keepalive-requests"), UpstreamKeepaliveTime: s("upstream-keepalive-time"),
		MaxWorkerConnections: s("max-worker-connections"), MaxWorkerOpenFiles: s("max-worker-open-files"),
	}
}

// renderMain renders nginx.conf.
func renderMain(cfg Config, settings bus.Settings, src sources, refused []string) (string, error) {
	v, err := newMainView(cfg, settings, src, refused)
	if err != nil {
		return "", err
	}
	return execute("nginx.conf.tmpl", v)
}

// newMainView resolves nginx.conf for its template.
func newMainView(cfg Config, s bus.Settings, src sources, refused []string) (mainView, error) {
	v := mainView{Config: cfg, Settings: s, Refused: refused, Src: newMainSources(src), Static: sourceSwitchyard,
		WorkerProcesses: s.WorkerProcesses, ControlSocket: bus.PlaceholderControlSocket, ServerTokens: "off", AccessLog: "off",
		Resolvers: resolverArgs(cfg.Resolvers, s.DisableIPv6DNS), ResolverSrc: src.configMapSource("disable-ipv6-dns"), SSLProtocols: strings.Join(s.SSLProtocols, " "),
		LimitReqStatus: errorStatus(s.LimitReqStatusCode), LimitConnStatus: errorStatus(s.LimitConnStatusCode),
		Keepalive: s.UpstreamKeepaliveConnections > 0, ProxyHeaders: newProxyHeadersView(s)}
	if cfg.WorkerProcesses != "" {
		v.WorkerProcesses, v.Src.WorkerProcesses = cfg.WorkerProcesses, ""
	}
	if s.ServerTokens {
		v.ServerTokens = "on"
	}
	if cfg.AccessLog {
		v.AccessLog = "logs/access.log upstreaminfo"
	}
	modules := []string{"ndk_http_module.so", "ngx_http_lua_module.so"}
	v.Passthrough, v.ServerPort = cfg.SSLPassthrough, "$server_port"
	v.Stream = cfg.SSLPassthrough || cfg.StreamServices
	if v.Stream {
		modules = append(modules, streamModule)
	}
	if cfg.SSLPassthrough {
		v.ServerPort = "$switchyard_server_port"
		modules = append(modules, StreamJSModule)
	}
	if cfg.loadModSecurity {
		modules = append(modules, ModSecurityModule)
	}
	for _, m := range modules {
		q, err := quote(cfg.ModulesDir + "/" + m)
		if err != nil {
			return mainView{}, err
		}
		v.LoadModules = append(v.LoadModules, q)
	}
	var err error
	if v.MetricsInit, err = cfg.MetricsBuckets.luaInit(); err != nil {
		return mainView{}, err
	}
	if v.TracingInit, v.TracingDictSize, err = tracingInit(cfg, s.TracingSettings); err != nil {
		return mainView{}, err
	}
	if v.ProxyLines, err = newHTTPProxyLines(s, src); err != nil {
		return mainView{}, err
	}
	if v.ClientLines, err = newClientLines(s, src); err != nil {
		return mainView{}, err
	}
	if v.TLSLines, err = newTLSLines(s, src); err != nil {
		return mainView{}, err
	}
	v.PlaceholderCert, v.PlaceholderKey = placeholderCertificate(s)
	if v.NginxLines, err = newNginxLines(s, src); err != nil {
		return mainView{}, err
	}
	if v.BlockMaps, err = blockMaps(s.AccessSettings, src); err != nil {
		return mainView{}, err
	}
	v.MultiAccept = onOff(s.EnableMultiAccept)
	if v.DebugConnections, err = debugConnections(s.DebugConnections); err != nil {
		return mainView{}, err
	}
	if !bus.ErrorLogLevelPattern.MatchString(s.ErrorLogLevel) || !bus.CPUAffinityPattern.MatchString(s.WorkerCPUAffinity) {
		return mainView{}, fmt.Errorf("refusing error-log-level %q or worker-cpu-affinity %q", s.ErrorLogLevel, s.WorkerCPUAffinity)
	}
	v.ErrorLogLevel, v.WorkerCPUAffinity = s.ErrorLogLevel, s.WorkerCPUAffinity
	if s.ErrorLogPath != "" {
		if v.ErrorLogFile, err = quote(s.ErrorLogPath); err != nil {
			return mainView{}, fmt.Errorf("error-log-path: %w", err)
		}
	}
	if v.SyslogErrorLog, err = syslogErrorLog(s.Syslog); err != nil {
		return mainView{}, fmt.Errorf("enable-syslog: %w", err)
	}
	switch v.RedirectCode = s.HTTPRedirectCode; v.RedirectCode {
	case 301, 302, 307, 308:
	default:
		return mainView{}, fmt.Errorf("http-redirect-code %d is not 301, 302, 307 or 308", v.RedirectCode)
	}
	v.WorkerConnections, v.WorkerOpenFiles = workerConnections(s), s.MaxWorkerOpenFiles
	limitKey, err := zoneKey(s.LimitConnZoneVariable)
	if err != nil {
		return mainView{}, err
	}
	if limitKey == limitKeyVariable {
		v.LimitKey = s.LimitConnZoneVariable
	}
	if cfg.User != "" {
		if v.User, err = quotedWords(cfg.User, cfg.Group); err != nil {
			return mainView{}, err
		}
	}
	v.HTTPSPort = `"` + bus.PlaceholderHTTPSPort + `"` // the applier's port
	if v.HSTS, err = luaString(hstsHeader(s)); err != nil {
		return mainView{}, err
	}
	if v.LogFormat, err = logFormat(s.LogFormatUpstream); err != nil {
		return mainView{}, err
	}
	if v.SSLCiphers, err = quote(s.SSLCiphers); err != nil {
		return mainView{}, err
	}
	if !bus.ForwardedForHeaderPattern.MatchString(s.ForwardedForHeader) {
		return mainView{}, fmt.Errorf("refusing forwarded-for-header %q", s.ForwardedForHeader)
	}
	v.RealIPHeader = `"` + s.ForwardedForHeader + `"`
	if v.ForwardedHostVar, err = headerVariable(s.ForwardedHostHeader); err != nil {
		return mainView{}, fmt.Errorf("forwarded-host-header: %w", err)
	}
	if v.StreamLog, err = newStreamLogView(cfg, s, src); err != nil {
		return mainView{}, err
	}
	err = newHTTPView(&v, cfg, s, src)
	return v, err
}

// debugConnections checks debug-connections' items again: each an IP
// address or a CIDR, written unquoted.
func debugConnections(items []string) ([]string, error) {
	for _, item := range items {
		_, errAddr := netip.ParseAddr(item)
		_, errPrefix := netip.ParsePrefix(item)
		if errAddr != nil && errPrefix != nil || strings.Contains(item, "%") {
			return nil, fmt.Errorf("debug-connections: refusing %q", item)
		}
	}
	return items, nil
}

// headerVariable is NGINX's variable of a request header: $http_ and the
// name lower-cased with "-" as "_". The name is checked again, as it is
// written unquoted.
func headerVariable(name string) (string, error) {
	if !bus.ForwardedForHeaderPattern.MatchString(name) {
		return "", fmt.Errorf("refusing header name %q", name)
	}
	return "$http_" + strings.ReplaceAll(strings.ToLower(name), "-", "_"), nil
}

// errorStatus is code when it is an error status NGINX can answer with,
// and 0 (not written) otherwise.
func errorStatus(code int) int {
	if code < 400 || code > 599 {
		return 0
	}
	return code
}

// quotedWords quotes each word and joins them with spaces.
func quotedWords(words ...string) (string, error) {
	out := make([]string, len(words))
	for i, w := range words {
		q, err := quote(w)
		if err != nil {
			return "", err
		}
		out[i] = q
	}
	return strings.Join(out, " "), nil
}

// resolverArgs are the resolver directive's arguments, as ingress-nginx
// writes them: every nameserver, valid=30s; with disable-ipv6-dns the IPv6
// nameservers are left out (unless no other is left: a resolver needs one)
// and ipv6=off asks for IPv4 addresses only. The nameservers matched
// resolverPattern (stage.go, options.go).
func resolverArgs(servers []string, noIPv6 bool) string {
	if len(servers) == 0 {
		return ""
	}
	kept := servers
	if noIPv6 {
		kept = slices.DeleteFunc(slices.Clone(servers), func(s string) bool { return strings.HasPrefix(s, "[") })
		if len(kept) == 0 {
			kept = servers
		}
	}
	args := strings.Join(kept, " ") + " valid=30s"
	if noIPv6 {
		args += " ipv6=off"
	}
	return args
}
