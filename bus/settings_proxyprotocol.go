package bus

// ProxyProtocolSettings are the controller ConfigMap keys for a load
// balancer in front that speaks the PROXY protocol (v1 or v2).
type ProxyProtocolSettings struct {
	// UseProxyProtocol is use-proxy-protocol: every HTTP and HTTPS listener
	// expects a PROXY header, and the client address is taken from it when
	// the peer is one of proxy-real-ip-cidr.
	// The time a connection may take to send its header is
	// client-header-timeout's on the HTTP listeners: NGINX's http module
	// has no timer of its own for it.
	UseProxyProtocol bool `json:"useProxyProtocol"`
	// ProxyProtocolHeaderTimeout is proxy-protocol-header-timeout, in
	// seconds: how long the stream listeners (the HTTPS addresses with
	// --enable-ssl-passthrough, as ingress-nginx's TLS proxy) wait for the
	// PROXY header.
	ProxyProtocolHeaderTimeout int `json:"proxyProtocolHeaderTimeout"`
}

// defaultProxyProtocolSettings are ingress-nginx's defaults.
func defaultProxyProtocolSettings() ProxyProtocolSettings {
	return ProxyProtocolSettings{ProxyProtocolHeaderTimeout: 5}
}
