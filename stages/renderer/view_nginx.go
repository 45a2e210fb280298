package renderer

import (
	"fmt"
	"strconv"

	"switchyard.dev/switchyard/bus"
)

// nginxSettingFields are the bus.NginxSettings keys, for attribution and
// for the fallback to the default on a refusal (revisions.go).
var nginxSettingFields = map[string]func(*bus.Settings) any{
	"default-type":                   func(s *bus.Settings) any { return &s.DefaultType },
	"enable-underscores-in-headers":  func(s *bus.Settings) any { return &s.EnableUnderscoresInHeaders },
	"ignore-invalid-headers":         func(s *bus.Settings) any { return &s.IgnoreInvalidHeaders },
	"map-hash-bucket-size":           func(s *bus.Settings) any { return &s.MapHashBucketSize },
	"proxy-headers-hash-bucket-size": func(s *bus.Settings) any { return &s.ProxyHeadersHashBucketSize },
	"proxy-headers-hash-max-size":    func(s *bus.Settings) any { return &s.ProxyHeadersHashMaxSize },
	"limit-rate":                     func(s *bus.Settings) any { return &s.LimitRate },
	"limit-rate-after":               func(s *bus.Settings) any { return &s.LimitRateAfter },
	"allow-backend-server-header":    func(s *bus.Settings) any { return &s.AllowBackendServerHeader },
	"enable-multi-accept":            func(s *bus.Settings) any { return &s.EnableMultiAccept },
	"error-log-level":                func(s *bus.Settings) any { return &s.ErrorLogLevel },
	"error-log-path":                 func(s *bus.Settings) any { return &s.ErrorLogPath },
	"worker-cpu-affinity":            func(s *bus.Settings) any { return &s.WorkerCPUAffinity },
	"generate-request-id":            func(s *bus.Settings) any { return &s.GenerateRequestID },
	"retry-non-idempotent":           func(s *bus.Settings) any { return &s.RetryNonIdempotent },
	"disable-ipv6-dns":               func(s *bus.Settings) any { return &s.DisableIPv6DNS },
	"disable-ipv6":                   func(s *bus.Settings) any { return &s.DisableIPv6 },
}

func init() { registerSettingFields(nginxSettingFields) }

// newNginxLines are the http{} directives of bus.NginxSettings, each
// attributed to its key; the default type is quoted, every other argument
// is a number or on/off.
func newNginxLines(s bus.Settings, src sources) ([]sourcedLine, error) {
	itoa := strconv.Itoa
	var out []sourcedLine
	var d directives
	d.addQuoted("default_type", s.DefaultType)
	add := func(key string) {
		out = append(out, sourcedLine{Src: src.configMapSource(key), Line: d.lines[len(d.lines)-1]})
	}
	add("default-type")
	for _, k := range []struct{ key, name, arg string }{
		{"enable-underscores-in-headers", "underscores_in_headers", onOff(s.EnableUnderscoresInHeaders)},
		{"ignore-invalid-headers", "ignore_invalid_headers", onOff(s.IgnoreInvalidHeaders)},
		{"map-hash-bucket-size", "map_hash_bucket_size", itoa(s.MapHashBucketSize)},
		{"proxy-headers-hash-bucket-size", "proxy_headers_hash_bucket_size", itoa(s.ProxyHeadersHashBucketSize)},
		{"proxy-headers-hash-max-size", "proxy_headers_hash_max_size", itoa(s.ProxyHeadersHashMaxSize)},
		{"limit-rate", "limit_rate", itoa(s.LimitRate)},
		{"limit-rate-after", "limit_rate_after", itoa(s.LimitRateAfter)},
	} {
		d.add(k.name, k.arg)
		add(k.key)
	}
	if s.AllowBackendServerHeader {
		d.add("proxy_pass_header", "Server")
		add("allow-backend-server-header")
	}
	if d.err != nil {
		return nil, fmt.Errorf("ConfigMap: %w", d.err)
	}
	return out, nil
}
