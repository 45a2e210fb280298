package bus

// StreamSettings are the controller ConfigMap keys of the TCP and UDP
// services' stream servers (bus/streams.go), with ingress-nginx's defaults.
type StreamSettings struct {
	// ProxyStreamTimeout is proxy-stream-timeout, an NGINX time: how long
	// a connection may be idle (proxy_timeout).
	ProxyStreamTimeout string `json:"proxyStreamTimeout"`
	// ProxyStreamNextUpstream is proxy-stream-next-upstream: a failed
	// connect tries the next endpoint.
	ProxyStreamNextUpstream bool `json:"proxyStreamNextUpstream"`
	// ProxyStreamNextUpstreamTimeout is proxy-stream-next-upstream-timeout,
	// an NGINX time ("0" is no limit).
	ProxyStreamNextUpstreamTimeout string `json:"proxyStreamNextUpstreamTimeout"`
	// ProxyStreamNextUpstreamTries is proxy-stream-next-upstream-tries (0
	// is no limit).
	ProxyStreamNextUpstreamTries int `json:"proxyStreamNextUpstreamTries"`
	// ProxyStreamResponses is proxy-stream-responses: the datagrams a UDP
	// backend answers each client datagram with.
	ProxyStreamResponses int `json:"proxyStreamResponses"`
}

// defaultStreamSettings are ingress-nginx's defaults.
func defaultStreamSettings() StreamSettings {
	return StreamSettings{ProxyStreamTimeout: "600s", ProxyStreamNextUpstream: true,
		ProxyStreamNextUpstreamTimeout: "600s", ProxyStreamNextUpstreamTries: 3, ProxyStreamResponses: 1}
}
