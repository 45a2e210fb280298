package bus

import "regexp"

// Patterns of the keys written into nginx.conf as they are: the
// translator checks the ConfigMap with them, the renderer again.
var (
	ErrorLogLevelPattern = regexp.MustCompile(`^(debug|info|notice|warn|error|crit|alert|emerg)$`)
	// CPUAffinityPattern is "", auto (with an optional mask) or up to 16
	// masks (Go caps nested repeat counts).
	CPUAffinityPattern = regexp.MustCompile(`^(|auto( [01]{1,64})?|[01]{1,64}( [01]{1,64}){0,15})$`)
	// ForwardedForHeaderPattern is a header real_ip_header takes by name,
	// and forwarded-host-header's, which becomes part of a variable name.
	ForwardedForHeaderPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}$`)
)

// NginxSettings are controller ConfigMap keys that each set one NGINX
// directive at http level (or in events{}), with nothing of Switchyard's
// own in between.
type NginxSettings struct {
	DefaultType                string `json:"defaultType"`                 // default-type: MIME type of a response without one
	EnableUnderscoresInHeaders bool   `json:"enableUnderscoresInHeaders"`  // enable-underscores-in-headers
	IgnoreInvalidHeaders       bool   `json:"ignoreInvalidHeaders"`        // ignore-invalid-headers
	MapHashBucketSize          int    `json:"mapHashBucketSize"`           // map-hash-bucket-size
	ProxyHeadersHashBucketSize int    `json:"proxyHeadersHashBucketSize"`  // proxy-headers-hash-bucket-size
	ProxyHeadersHashMaxSize    int    `json:"proxyHeadersHashMaxSize"`     // proxy-headers-hash-max-size
	LimitRate                  int    `json:"limitRate"`                   // limit-rate: bytes per second to a client, 0 unlimited
	LimitRateAfter             int    `json:"limitRateAfter"`              // limit-rate-after: bytes sent before limit-rate applies
	AllowBackendServerHeader   bool   `json:"allowBackendServerHeader"`    // allow-backend-server-header: pass the backend's Server header
	EnableMultiAccept          bool   `json:"enableMultiAccept"`           // enable-multi-accept
	ErrorLogLevel              string `json:"errorLogLevel"`               // error-log-level: NGINX's error_log level
	WorkerCPUAffinity          string `json:"workerCPUAffinity,omitempty"` // worker-cpu-affinity: "" (none), auto or bit masks
	GenerateRequestID          bool   `json:"generateRequestID"`           // generate-request-id: a fresh $req_id when the client sends none
	RetryNonIdempotent         bool   `json:"retryNonIdempotent"`          // retry-non-idempotent: proxy_next_upstream may retry POST, LOCK, PATCH
	// DisableIPv6DNS is disable-ipv6-dns: the resolver asks for IPv4
	// addresses only (ipv6=off) and leaves out IPv6 nameservers.
	DisableIPv6DNS bool `json:"disableIPv6DNS,omitempty"`
	// DisableIPv6 is disable-ipv6: NGINX listens on none of the applier's
	// IPv6 addresses (bus.ListenPlaceholder).
	DisableIPv6 bool `json:"disableIPv6,omitempty"`
	// ErrorLogPath is error-log-path: a file NGINX writes its error log to
	// besides stderr, which the applier reads (its reload errors, and the
	// controller's log); "" for stderr only.
	ErrorLogPath string `json:"errorLogPath,omitempty"`
	// DebugConnections is debug-connections: client addresses and CIDRs
	// whose connections NGINX logs at debug level (debug_connection; the
	// Debian build has --with-debug), canonical; nil for none.
	DebugConnections []string `json:"debugConnections,omitempty"`
}

// defaultNginxSettings are ingress-nginx's defaults.
func defaultNginxSettings() NginxSettings {
	return NginxSettings{
		DefaultType: "text/html", IgnoreInvalidHeaders: true, MapHashBucketSize: 64,
		ProxyHeadersHashBucketSize: 64, ProxyHeadersHashMaxSize: 512, EnableMultiAccept: true,
		ErrorLogLevel: "notice", GenerateRequestID: true,
	}
}
