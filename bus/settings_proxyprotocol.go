package bus

// ProxyProtocolSettings are the controller ConfigMap keys that decide the
// client address: a load balancer in front that speaks the PROXY protocol
// (v1 or v2), or one that says it in a header.
type ProxyProtocolSettings struct {
	// UseProxyProtocol is use-proxy-protocol: every HTTP and HTTPS listener
	// expects a PROXY header, and the client address is taken from it when
	// the peer is one of proxy-real-ip-cidr.
	// The time a connection may take to send its header is
	// client-header-timeout's on the HTTP listeners: NGINX's http module
	// has no timer of its own for it.
	UseProxyProtocol bool `json:"useProxyProtocol"`
	// EnableRealIP is enable-real-ip: the client address is taken from
	// ForwardedForHeader when the peer is one of proxy-real-ip-cidr, without
	// trusting the other forwarded headers (use-forwarded-headers does both).
	EnableRealIP bool `json:"enableRealIP"`
	// ForwardedForHeader is forwarded-for-header: the header the client
	// address is read from (enable-real-ip, use-forwarded-headers).
	ForwardedForHeader string `json:"forwardedForHeader"`
	// ForwardedHostHeader is forwarded-host-header: the header
	// use-forwarded-headers takes the host sent upstream ($best_http_host)
	// from; a header name (ForwardedForHeaderPattern).
	ForwardedHostHeader string `json:"forwardedHostHeader"`
	// ProxyProtocolHeaderTimeout is proxy-protocol-header-timeout, in
	// seconds: how long the stream listeners (the HTTPS addresses with
	// --enable-ssl-passthrough, as ingress-nginx's TLS proxy) wait for the
	// PROXY header.
	ProxyProtocolHeaderTimeout int `json:"proxyProtocolHeaderTimeout"`
}

// defaultProxyProtocolSettings are ingress-nginx's defaults.
func defaultProxyProtocolSettings() ProxyProtocolSettings {
	return ProxyProtocolSettings{ForwardedForHeader: "X-Forwarded-For", ForwardedHostHeader: "X-Forwarded-Host", ProxyProtocolHeaderTimeout: 5}
}
