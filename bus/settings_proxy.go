package bus

// ProxySettings are the controller ConfigMap keys of how NGINX proxies
// (body size, buffering, timeouts, retries, cookie and redirect
// rewriting), of the client side (keepalive, header buffers and timeouts,
// HTTP/2 streams) and of NGINX's sizes (hashes, worker connections). They
// are written at http level; a location's proxy-* annotations override
// them there, as ingress-nginx's annotations override its ConfigMap.
type ProxySettings struct {
	ProxyBodySize        string `json:"proxyBodySize"`        // proxy-body-size, an NGINX size: "1m", "512k", "0"
	ClientBodyBufferSize string `json:"clientBodyBufferSize"` // client-body-buffer-size
	ProxyBuffering       string `json:"proxyBuffering"`       // proxy-buffering: on or off
	ProxyBuffersNumber   int    `json:"proxyBuffersNumber"`   // proxy-buffers-number
	// ProxyBusyBuffersSize is proxy-busy-buffers-size, "" for NGINX's
	// default (twice proxy-buffer-size).
	ProxyBusyBuffersSize  string `json:"proxyBusyBuffersSize,omitempty"`
	ProxyBufferSize       string `json:"proxyBufferSize"`       // proxy-buffer-size
	ProxyMaxTempFileSize  string `json:"proxyMaxTempFileSize"`  // proxy-max-temp-file-size
	ProxyRequestBuffering string `json:"proxyRequestBuffering"` // proxy-request-buffering: on or off

	ProxyConnectTimeout      int    `json:"proxyConnectTimeout"`      // proxy-connect-timeout, seconds
	ProxySendTimeout         int    `json:"proxySendTimeout"`         // proxy-send-timeout, seconds
	ProxyReadTimeout         int    `json:"proxyReadTimeout"`         // proxy-read-timeout, seconds
	ProxyNextUpstream        string `json:"proxyNextUpstream"`        // proxy-next-upstream, conditions space-separated
	ProxyNextUpstreamTimeout int    `json:"proxyNextUpstreamTimeout"` // proxy-next-upstream-timeout, seconds, 0 no limit
	ProxyNextUpstreamTries   int    `json:"proxyNextUpstreamTries"`   // proxy-next-upstream-tries, 0 no limit

	ProxyHTTPVersion  string `json:"proxyHTTPVersion"`  // proxy-http-version: 1.0 or 1.1
	ProxyCookieDomain string `json:"proxyCookieDomain"` // proxy-cookie-domain: "off" or "FROM TO"
	ProxyCookiePath   string `json:"proxyCookiePath"`   // proxy-cookie-path: "off" or "FROM TO"
	ProxyRedirectFrom string `json:"proxyRedirectFrom"` // proxy-redirect-from: "off", "default" or a URL
	ProxyRedirectTo   string `json:"proxyRedirectTo"`   // proxy-redirect-to: "off" or a URL

	KeepAlive                 int    `json:"keepAlive"`                 // keep-alive, seconds (client keepalive_timeout)
	KeepAliveRequests         int    `json:"keepAliveRequests"`         // keep-alive-requests
	ClientHeaderBufferSize    string `json:"clientHeaderBufferSize"`    // client-header-buffer-size
	ClientHeaderTimeout       int    `json:"clientHeaderTimeout"`       // client-header-timeout, seconds
	ClientBodyTimeout         int    `json:"clientBodyTimeout"`         // client-body-timeout, seconds
	LargeClientHeaderBuffers  string `json:"largeClientHeaderBuffers"`  // large-client-header-buffers: "NUMBER SIZE"
	HTTP2MaxConcurrentStreams int    `json:"http2MaxConcurrentStreams"` // http2-max-concurrent-streams

	VariablesHashBucketSize  int  `json:"variablesHashBucketSize"`  // variables-hash-bucket-size
	VariablesHashMaxSize     int  `json:"variablesHashMaxSize"`     // variables-hash-max-size
	ServerNameHashBucketSize int  `json:"serverNameHashBucketSize"` // server-name-hash-bucket-size
	ServerNameHashMaxSize    int  `json:"serverNameHashMaxSize"`    // server-name-hash-max-size
	MaxWorkerConnections     int  `json:"maxWorkerConnections"`     // max-worker-connections, 0: max-worker-open-files or 16384
	MaxWorkerOpenFiles       int  `json:"maxWorkerOpenFiles"`       // max-worker-open-files, 0: NGINX's (the process limit)
	ReusePort                bool `json:"reusePort"`                // reuse-port: reuseport on the default server's listen

	// How NGINX writes the Location of the redirects it makes itself.
	UsePortInRedirects bool `json:"usePortInRedirects"` // use-port-in-redirects: port_in_redirect
	RelativeRedirects  bool `json:"relativeRedirects"`  // relative-redirects: absolute_redirect off
}

// defaultProxySettings are ingress-nginx's defaults, but for the server
// name hash: ingress-nginx grows it to fit the hosts it serves; Switchyard
// starts at sizes that fit tens of thousands of hosts instead.
func defaultProxySettings() ProxySettings {
	return ProxySettings{
		ProxyBodySize: "1m", ClientBodyBufferSize: "8k", ProxyBuffering: "off", ProxyBuffersNumber: 4,
		ProxyBufferSize: "4k", ProxyMaxTempFileSize: "1024m", ProxyRequestBuffering: "on",
		ProxyConnectTimeout: 5, ProxySendTimeout: 60, ProxyReadTimeout: 60,
		ProxyNextUpstream: "error timeout", ProxyNextUpstreamTimeout: 0, ProxyNextUpstreamTries: 3,
		ProxyHTTPVersion: "1.1", ProxyCookieDomain: "off", ProxyCookiePath: "off",
		ProxyRedirectFrom: "off", ProxyRedirectTo: "off",
		KeepAlive: 75, KeepAliveRequests: 1000, ClientHeaderBufferSize: "1k",
		ClientHeaderTimeout: 60, ClientBodyTimeout: 60, LargeClientHeaderBuffers: "4 8k",
		HTTP2MaxConcurrentStreams: 128,
		VariablesHashBucketSize:   256, VariablesHashMaxSize: 2048,
		ServerNameHashBucketSize: 128, ServerNameHashMaxSize: 65536,
		MaxWorkerConnections: 16384, MaxWorkerOpenFiles: 0, ReusePort: true,
	}
}
