package bus

// ProxyProtocolSettings are the controller ConfigMap keys for a load
// balancer in front that speaks the PROXY protocol (v1 or v2).
type ProxyProtocolSettings struct {
	// UseProxyProtocol is use-proxy-protocol: every HTTP and HTTPS listener
	// expects a PROXY header, and the client address is taken from it when
	// the peer is one of proxy-real-ip-cidr.
	// The time a connection may take to send its header is
	// client-header-timeout's: NGINX's HTTP listeners have no timer of
	// their own for it (proxy-protocol-header-timeout is for stream
	// listeners, and is reported as not supported).
	UseProxyProtocol bool `json:"useProxyProtocol"`
}

// defaultProxyProtocolSettings are ingress-nginx's defaults.
func defaultProxyProtocolSettings() ProxyProtocolSettings {
	return ProxyProtocolSettings{}
}
