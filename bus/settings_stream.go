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

	// LogFormatStream is log-format-stream, the stream block's access log
	// format (log_stream); checked as log-format-upstream is.
	LogFormatStream string `json:"logFormatStream"`
	// StreamAccessLogPath is stream-access-log-path: where the TCP and
	// UDP services log, "" for access-log-path's file.
	StreamAccessLogPath string `json:"streamAccessLogPath,omitempty"`
	// DisableStreamAccessLog is disable-stream-access-log; disable-access-log
	// turns the stream log off too, as in ingress-nginx.
	DisableStreamAccessLog bool `json:"disableStreamAccessLog,omitempty"`
}

// DefaultLogFormatStream is ingress-nginx's log-format-stream.
const DefaultLogFormatStream = `[$remote_addr] [$time_local] $protocol $status $bytes_sent $bytes_received $session_time`

// defaultStreamSettings are ingress-nginx's defaults.
func defaultStreamSettings() StreamSettings {
	return StreamSettings{ProxyStreamTimeout: "600s", ProxyStreamNextUpstream: true,
		ProxyStreamNextUpstreamTimeout: "600s", ProxyStreamNextUpstreamTries: 3, ProxyStreamResponses: 1,
		LogFormatStream: DefaultLogFormatStream}
}
