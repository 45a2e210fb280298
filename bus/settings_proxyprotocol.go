package bus

// ProxyProtocolSettings are the controller ConfigMap keys that decide the
// client address: a load balancer in front that speaks the PROXY protocol
// (v1 or v2), or one that says it in a header.
type ProxyProtocolSettings struct {
	// UseProxyProtocol is use-proxy-protocol: every HTTP and HTTPS listener
	// expects a PROXY header, and the client address is taken from it when
	// the peer is one of proxy-real-ip-cidr.
	// The time a connection may take to send its header is
	// client-header-timeout's: NGINX's HTTP listeners have no timer of
	// their own for it (proxy-protocol-header-timeout is for stream
	// listeners, and is reported as not supported).
	UseProxyProtocol bool `json:"useProxyProtocol"`
	// EnableRealIP is enable-real-ip: the client address is taken from
	// ForwardedForHeader when the peer is one of proxy-real-ip-cidr, without
	// trusting the other forwarded headers (use-forwarded-headers does both).
	EnableRealIP bool `json:"enableRealIP"`
	// ForwardedForHeader is forwarded-for-header: the header the client
	// address is read from (enable-real-ip, use-forwarded-headers).
	ForwardedForHeader string `json:"forwardedForHeader"`
}

// defaultProxyProtocolSettings are ingress-nginx's defaults.
func defaultProxyProtocolSettings() ProxyProtocolSettings {
	return ProxyProtocolSettings{ForwardedForHeader: "X-Forwarded-For"}
}
