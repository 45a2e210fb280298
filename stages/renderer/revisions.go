package renderer

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"

	"switchyard.dev/switchyard/bus"
)

// The attribution comments carry revisions the renderer computes here; the
// applier copies them into its refusals (bus.Refusal.Rev), and a refusal
// holds only while the source's revision is the one refused.

// sourceRev is the short revision the attribution comments carry: the
// first 48 bits of the SHA-256 of what was rendered from the source.
func sourceRev(parts ...[]byte) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write(p)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:12]
}

// registerSettingFields adds a settings group's keys to settingFields; a
// key in two groups is a programming error.
func registerSettingFields(fields map[string]func(*bus.Settings) any) {
	for key, field := range fields {
		if _, dup := settingFields[key]; dup {
			panic("renderer: ConfigMap key " + key + " has two fields")
		}
		settingFields[key] = field
	}
}

// settingFields are the ConfigMap keys whose values the renderer writes
// into a configuration file NGINX tests, each with its field: a key NGINX
// refuses falls back to its default (resetSetting), and the attribution
// comments name the value's revision (settingRev).
var settingFields = map[string]func(*bus.Settings) any{
	"worker-processes":               func(s *bus.Settings) any { return &s.WorkerProcesses },
	"worker-shutdown-timeout":        func(s *bus.Settings) any { return &s.WorkerShutdownTimeout },
	"server-tokens":                  func(s *bus.Settings) any { return &s.ServerTokens },
	"use-forwarded-headers":          func(s *bus.Settings) any { return &s.UseForwardedHeaders },
	"proxy-real-ip-cidr":             func(s *bus.Settings) any { return &s.ProxyRealIPCIDR },
	"use-proxy-protocol":             func(s *bus.Settings) any { return &s.UseProxyProtocol },
	"enable-real-ip":                 func(s *bus.Settings) any { return &s.EnableRealIP },
	"force-ssl-redirect":             func(s *bus.Settings) any { return &s.ForceSSLRedirect },
	"preserve-trailing-slash":        func(s *bus.Settings) any { return &s.PreserveTrailingSlash },
	"no-tls-redirect-locations":      func(s *bus.Settings) any { return &s.NoTLSRedirectLocations },
	"forwarded-for-header":           func(s *bus.Settings) any { return &s.ForwardedForHeader },
	"forwarded-host-header":          func(s *bus.Settings) any { return &s.ForwardedHostHeader },
	"log-format-upstream":            func(s *bus.Settings) any { return &s.LogFormatUpstream },
	"limit-req-status-code":          func(s *bus.Settings) any { return &s.LimitReqStatusCode },
	"limit-conn-status-code":         func(s *bus.Settings) any { return &s.LimitConnStatusCode },
	"limit-conn-zone-variable":       func(s *bus.Settings) any { return &s.LimitConnZoneVariable },
	"debug-connections":              func(s *bus.Settings) any { return &s.DebugConnections },
	"proxy-body-size":                func(s *bus.Settings) any { return &s.ProxyBodySize },
	"proxy-connect-timeout":          func(s *bus.Settings) any { return &s.ProxyConnectTimeout },
	"proxy-send-timeout":             func(s *bus.Settings) any { return &s.ProxySendTimeout },
	"proxy-read-timeout":             func(s *bus.Settings) any { return &s.ProxyReadTimeout },
	"compute-full-forwarded-for":     func(s *bus.Settings) any { return &s.ComputeFullForwardedFor },
	"ssl-protocols":                  func(s *bus.Settings) any { return &s.SSLProtocols },
	"ssl-ciphers":                    func(s *bus.Settings) any { return &s.SSLCiphers },
	"upstream-keepalive-connections": func(s *bus.Settings) any { return &s.UpstreamKeepaliveConnections },
	"upstream-keepalive-timeout":     func(s *bus.Settings) any { return &s.UpstreamKeepaliveTimeout },
	"upstream-keepalive-requests":    func(s *bus.Settings) any { return &s.UpstreamKeepaliveRequests },
	"upstream-keepalive-time":        func(s *bus.Settings) any { return &s.UpstreamKeepaliveTime },
	"custom-http-errors":             func(s *bus.Settings) any { return &s.CustomHTTPErrors },
	// settings_proxy.go's keys.
	"proxy-max-temp-file-size":       func(s *bus.Settings) any { return &s.ProxyMaxTempFileSize },
	"client-body-buffer-size":        func(s *bus.Settings) any { return &s.ClientBodyBufferSize },
	"proxy-buffering":                func(s *bus.Settings) any { return &s.ProxyBuffering },
	"proxy-buffers-number":           func(s *bus.Settings) any { return &s.ProxyBuffersNumber },
	"proxy-buffer-size":              func(s *bus.Settings) any { return &s.ProxyBufferSize },
	"proxy-busy-buffers-size":        func(s *bus.Settings) any { return &s.ProxyBusyBuffersSize },
	"disable-proxy-intercept-errors": func(s *bus.Settings) any { return &s.DisableProxyInterceptErrors },
	"proxy-request-buffering":        func(s *bus.Settings) any { return &s.ProxyRequestBuffering },
	"proxy-next-upstream":            func(s *bus.Settings) any { return &s.ProxyNextUpstream },
	"proxy-next-upstream-timeout":    func(s *bus.Settings) any { return &s.ProxyNextUpstreamTimeout },
	"proxy-next-upstream-tries":      func(s *bus.Settings) any { return &s.ProxyNextUpstreamTries },
	"proxy-http-version":             func(s *bus.Settings) any { return &s.ProxyHTTPVersion },
	"proxy-cookie-domain":            func(s *bus.Settings) any { return &s.ProxyCookieDomain },
	"proxy-cookie-path":              func(s *bus.Settings) any { return &s.ProxyCookiePath },
	"proxy-redirect-from":            func(s *bus.Settings) any { return &s.ProxyRedirectFrom },
	"proxy-redirect-to":              func(s *bus.Settings) any { return &s.ProxyRedirectTo },
	"keep-alive":                     func(s *bus.Settings) any { return &s.KeepAlive },
	"keep-alive-requests":            func(s *bus.Settings) any { return &s.KeepAliveRequests },
	"client-header-buffer-size":      func(s *bus.Settings) any { return &s.ClientHeaderBufferSize },
	"client-header-timeout":          func(s *bus.Settings) any { return &s.ClientHeaderTimeout },
	"client-body-timeout":            func(s *bus.Settings) any { return &s.ClientBodyTimeout },
	"large-client-header-buffers":    func(s *bus.Settings) any { return &s.LargeClientHeaderBuffers },
	"http2-max-concurrent-streams":   func(s *bus.Settings) any { return &s.HTTP2MaxConcurrentStreams },
	"variables-hash-bucket-size":     func(s *bus.Settings) any { return &s.VariablesHashBucketSize },
	"variables-hash-max-size":        func(s *bus.Settings) any { return &s.VariablesHashMaxSize },
	"server-name-hash-bucket-size":   func(s *bus.Settings) any { return &s.ServerNameHashBucketSize },
	"server-name-hash-max-size":      func(s *bus.Settings) any { return &s.ServerNameHashMaxSize },
	"max-worker-connections":         func(s *bus.Settings) any { return &s.MaxWorkerConnections },
	"max-worker-open-files":          func(s *bus.Settings) any { return &s.MaxWorkerOpenFiles },
	"use-port-in-redirects":          func(s *bus.Settings) any { return &s.UsePortInRedirects },
	"relative-redirects":             func(s *bus.Settings) any { return &s.RelativeRedirects },
	"reuse-port":                     func(s *bus.Settings) any { return &s.ReusePort },
}

// settingRev is the revision of a ConfigMap key's value in s, as the
// attribution comments carry it; "" for a key not written into a file.
func settingRev(s *bus.Settings, key string) string {
	field, ok := settingFields[key]
	if !ok {
		return ""
	}
	data, _ := json.Marshal(field(s))
	return sourceRev([]byte(key), data)
}

// resetSetting sets a ConfigMap key back to its ingress-nginx default and
// says whether the key is one the renderer writes.
func resetSetting(s *bus.Settings, key string) bool {
	field, ok := settingFields[key]
	if !ok {
		return false
	}
	def := bus.DefaultSettings()
	reflect.ValueOf(field(s)).Elem().Set(reflect.ValueOf(field(&def)).Elem())
	return true
}
