package bus

import "regexp"

// Settings are the controller-wide settings from the controller ConfigMap
// (--configmap NAMESPACE/NAME), with ingress-nginx's keys and defaults. The
// translator parses them (an invalid value is reported and its default
// kept) and publishes them under SettingsKey; the renderer writes them.
type Settings struct {
	SSLRedirect           bool `json:"sslRedirect"`           // ssl-redirect: 308 to HTTPS for TLS hosts
	HSTS                  bool `json:"hsts"`                  // hsts
	HSTSMaxAge            int  `json:"hstsMaxAge"`            // hsts-max-age, seconds
	HSTSIncludeSubdomains bool `json:"hstsIncludeSubdomains"` // hsts-include-subdomains
	HSTSPreload           bool `json:"hstsPreload"`           // hsts-preload

	// ProxySettings are the proxy, client and server-size keys
	// (settings_proxy.go).
	ProxySettings

	UseForwardedHeaders     bool     `json:"useForwardedHeaders"`     // use-forwarded-headers: trust X-Forwarded-* from clients
	ComputeFullForwardedFor bool     `json:"computeFullForwardedFor"` // compute-full-forwarded-for: append to X-Forwarded-For
	ProxyRealIPCIDR         []string `json:"proxyRealIPCIDR"`         // proxy-real-ip-cidr, comma-separated CIDRs

	ServerTokens bool `json:"serverTokens"` // server-tokens
	UseHTTP2     bool `json:"useHTTP2"`     // use-http2

	UpstreamKeepaliveConnections int    `json:"upstreamKeepaliveConnections"` // upstream-keepalive-connections
	UpstreamKeepaliveTimeout     int    `json:"upstreamKeepaliveTimeout"`     // upstream-keepalive-timeout, seconds
	UpstreamKeepaliveRequests    int    `json:"upstreamKeepaliveRequests"`    // upstream-keepalive-requests
	UpstreamKeepaliveTime        string `json:"upstreamKeepaliveTime"`        // upstream-keepalive-time, an NGINX time: "1h"

	WorkerProcesses       string `json:"workerProcesses"`       // worker-processes: "auto" or a number
	WorkerShutdownTimeout string `json:"workerShutdownTimeout"` // worker-shutdown-timeout, an NGINX time: "240s"

	LogFormatUpstream string   `json:"logFormatUpstream"` // log-format-upstream; may hold $variables and double quotes
	SSLProtocols      []string `json:"sslProtocols"`      // ssl-protocols, space-separated
	SSLCiphers        string   `json:"sslCiphers"`        // ssl-ciphers, OpenSSL cipher list
	CustomHTTPErrors  []int    `json:"customHTTPErrors"`  // custom-http-errors, comma-separated codes
	// DisableProxyInterceptErrors is disable-proxy-intercept-errors: the
	// backend's own error answers pass, custom-http-errors pages serve
	// only NGINX's own errors (no endpoint, timeouts).
	DisableProxyInterceptErrors bool `json:"disableProxyInterceptErrors,omitempty"`

	LimitReqStatusCode  int `json:"limitReqStatusCode"`  // limit-req-status-code: answer to requests over limit-rps/rpm
	LimitConnStatusCode int `json:"limitConnStatusCode"` // limit-conn-status-code: answer over limit-connections
	// LimitConnZoneVariable is limit-conn-zone-variable: the key of every
	// rate limit zone (limit-connections, limit-rps, limit-rpm), one NGINX
	// variable such as $binary_remote_addr (LimitZoneVariablePattern).
	LimitConnZoneVariable string `json:"limitConnZoneVariable"`

	AllowSnippetAnnotations bool   `json:"allowSnippetAnnotations"` // allow-snippet-annotations
	AnnotationsRiskLevel    string `json:"annotationsRiskLevel"`    // annotations-risk-level: Low, Medium, High, Critical
	// AnnotationValueWordBlocklist is annotation-value-word-blocklist: an
	// Ingress with an annotation (under the prefix) whose value holds one
	// of these words is not served, as in ingress-nginx.
	AnnotationValueWordBlocklist []string `json:"annotationValueWordBlocklist"`
	// AllowCrossNamespaceResources is allow-cross-namespace-resources:
	// annotations naming a Secret or ConfigMap ("namespace/name") may name
	// one of another namespace (bus.RefAllowed). Off by default, as in
	// ingress-nginx since v1.12.
	AllowCrossNamespaceResources bool `json:"allowCrossNamespaceResources,omitempty"`

	// LoadBalance is load-balance: round_robin or ewma, for every backend
	// whose Ingresses set no load-balance annotation. It reaches the Lua
	// balancer on each backend (annotations stage), never nginx.conf.
	LoadBalance string `json:"loadBalance"`
	// ServiceUpstream is service-upstream: the default of the
	// service-upstream annotation (an Ingress's annotation wins), proxying
	// to the Service's cluster IP instead of its endpoints. The translator
	// reads it, never nginx.conf.
	ServiceUpstream bool `json:"serviceUpstream,omitempty"`
	// ProxySSLLocationOnly is proxy-ssl-location-only. Nothing reads it:
	// Switchyard always writes the proxy-ssl-* annotations in the locations
	// of the Ingress that sets them, which is what the key asks of
	// ingress-nginx; without it, ingress-nginx also writes the first
	// Ingress's into the server block (docs/compatibility.md).
	ProxySSLLocationOnly bool `json:"proxySSLLocationOnly,omitempty"`

	PathsSettings         // settings_paths.go
	ProxyProtocolSettings // settings_proxyprotocol.go
	TLSSettings           // settings_tls.go
	NginxSettings         // one-directive keys (settings_nginx.go)
	HTTPSettings          // compression, access log, added headers (settings_http.go)
	AccessSettings        // global source ranges and block lists (settings_access.go)
	GlobalAuthSettings    // global external auth (settings_globalauth.go)
	RedirectSettings      // force-ssl-redirect and the like (settings_redirect.go)
	StreamSettings        // the TCP and UDP services' proxy-stream-* keys (settings_stream.go)
	ModSecuritySettings   // enable-modsecurity and the Core Rule Set (settings_modsecurity.go)
	TracingSettings       // request tracing, OpenTelemetry (settings_tracing.go)

	// Problems are what the translator found in the ConfigMap (invalid
	// values, keys not supported, refused or unknown), for reports such as
	// `switchyard render`; nothing renders them.
	Problems []Problem `json:"problems,omitempty"`
}

// DefaultLimitConnZoneVariable is ingress-nginx's limit-conn-zone-variable:
// the client address, 4 bytes (IPv4) or 16 (IPv6) a state.
const DefaultLimitConnZoneVariable = "$binary_remote_addr"

// LimitZoneVariablePattern is one NGINX variable by name, as
// limit-conn-zone-variable must be: nothing else can reach the zones' key.
var LimitZoneVariablePattern = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// SettingsKey is the model key of the controller settings.
const SettingsKey = KindConfig + ".controller"

// DefaultLogFormatUpstream is ingress-nginx's upstreaminfo format.
const DefaultLogFormatUpstream = `$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $request_length $request_time [$proxy_upstream_name] [$proxy_alternative_upstream_name] $upstream_addr $upstream_response_length $upstream_response_time $upstream_status $req_id`

// DefaultSettings are ingress-nginx's defaults for the keys above. A group
// of keys added later lives in its own settings_<group>.go as a struct
// embedded in Settings (JSON stays flat) with its own defaults function,
// called here.
func DefaultSettings() Settings {
	s := Settings{
		SSLRedirect: true, HSTS: true, HSTSMaxAge: 31536000, HSTSIncludeSubdomains: true,
		ProxySettings:                defaultProxySettings(),
		ProxyRealIPCIDR:              []string{"0.0.0.0/0"},
		UseHTTP2:                     true,
		UpstreamKeepaliveConnections: 320, UpstreamKeepaliveTimeout: 60, UpstreamKeepaliveRequests: 10000,
		UpstreamKeepaliveTime: "1h",
		WorkerProcesses:       "auto", WorkerShutdownTimeout: "240s",
		LogFormatUpstream:  DefaultLogFormatUpstream,
		SSLProtocols:       []string{"TLSv1.2", "TLSv1.3"},
		SSLCiphers:         "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384",
		CustomHTTPErrors:   []int{},
		LimitReqStatusCode: 503, LimitConnStatusCode: 503, LimitConnZoneVariable: DefaultLimitConnZoneVariable,
		AnnotationsRiskLevel: "High", AnnotationValueWordBlocklist: []string{},
		LoadBalance:  LoadBalanceRoundRobin,
		HTTPSettings: defaultHTTPSettings(),
	}
	s.PathsSettings = defaultPathsSettings()
	s.ProxyProtocolSettings = defaultProxyProtocolSettings()
	s.TLSSettings = defaultTLSSettings()
	s.NginxSettings = defaultNginxSettings()
	s.AccessSettings = defaultAccessSettings()
	s.GlobalAuthSettings = defaultGlobalAuthSettings()
	s.RedirectSettings = defaultRedirectSettings()
	s.StreamSettings = defaultStreamSettings()
	s.TracingSettings = defaultTracingSettings()
	return s
}

// hostNameRE is a DNS host name, unanchored: dot-separated labels of
// letters, digits and "-", none starting or ending with "-". The patterns
// of the ConfigMap's host values are built from it.
const hostNameRE = `[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*`
