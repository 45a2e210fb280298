package translator

import (
	"regexp"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// nginxSettings are the one-directive keys (bus.NginxSettings).
var nginxSettings = map[string]settingParser{
	"default-type": patternSetting(func(s *bus.Settings) *string { return &s.DefaultType }, defaultTypePattern,
		"a MIME type such as text/html: type/subtype of letters, digits and . + - _"),
	"enable-underscores-in-headers":  boolSetting(func(s *bus.Settings) *bool { return &s.EnableUnderscoresInHeaders }),
	"ignore-invalid-headers":         boolSetting(func(s *bus.Settings) *bool { return &s.IgnoreInvalidHeaders }),
	"map-hash-bucket-size":           intSetting(func(s *bus.Settings) *int { return &s.MapHashBucketSize }, 32, 65536, "bytes"),
	"proxy-headers-hash-bucket-size": intSetting(func(s *bus.Settings) *int { return &s.ProxyHeadersHashBucketSize }, 32, 65536, "bytes"),
	"proxy-headers-hash-max-size":    intSetting(func(s *bus.Settings) *int { return &s.ProxyHeadersHashMaxSize }, 32, 1048576, "entries"),
	"limit-rate":                     intSetting(func(s *bus.Settings) *int { return &s.LimitRate }, 0, 1<<30, "bytes per second, 0 is no limit"),
	"limit-rate-after":               intSetting(func(s *bus.Settings) *int { return &s.LimitRateAfter }, 0, 1<<30, "bytes"),
	"allow-backend-server-header":    boolSetting(func(s *bus.Settings) *bool { return &s.AllowBackendServerHeader }),
	"enable-multi-accept":            boolSetting(func(s *bus.Settings) *bool { return &s.EnableMultiAccept }),
	"error-log-level": patternSetting(func(s *bus.Settings) *string { return &s.ErrorLogLevel }, bus.ErrorLogLevelPattern,
		"one of debug, info, notice, warn, error, crit, alert, emerg"),
	"error-log-path": setting(func(s *bus.Settings) *string { return &s.ErrorLogPath },
		"an absolute file path of 1 to 1024 characters from A-Z a-z 0-9 . _ - / without \"..\", or empty for none",
		parseLogPath, identity),
	"worker-cpu-affinity": patternSetting(func(s *bus.Settings) *string { return &s.WorkerCPUAffinity }, bus.CPUAffinityPattern,
		`empty, "auto" (optionally followed by a CPU mask) or space-separated CPU masks of 0 and 1`),
	"generate-request-id":  boolSetting(func(s *bus.Settings) *bool { return &s.GenerateRequestID }),
	"retry-non-idempotent": boolSetting(func(s *bus.Settings) *bool { return &s.RetryNonIdempotent }),
	"disable-ipv6-dns":     boolSetting(func(s *bus.Settings) *bool { return &s.DisableIPv6DNS }),
	"disable-ipv6":         boolSetting(func(s *bus.Settings) *bool { return &s.DisableIPv6 }),
	"debug-connections": setting(func(s *bus.Settings) *[]string { return &s.DebugConnections },
		"a comma-separated list of at most 64 IPv4 or IPv6 addresses and CIDRs such as 10.0.0.5 or 192.168.0.0/24, or empty for none",
		parseDebugConnections, joinWith(",")),
}

// parseDebugConnections reads debug-connections: every item an address or
// a CIDR (stored masked, as NGINX reads it), or the whole list is refused.
func parseDebugConnections(v string) ([]string, bool) {
	if v == "" {
		return nil, true
	}
	items := strings.Split(v, ",")
	if len(items) > 64 {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, item := range items {
		c, ok := debugConnection(strings.TrimSpace(item))
		if !ok {
			return nil, false
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, true
}

// debugConnection is one address or CIDR, canonical: without a zone, a
// CIDR's host bits cleared.
func debugConnection(item string) (string, bool) {
	p, bare, ok := features.ParseAddrOrCIDR(item)
	switch {
	case !ok:
		return "", false
	case bare:
		return p.Addr().String(), true
	}
	return p.Masked().String(), true
}

// defaultTypePattern is one MIME type, without wildcards.
var defaultTypePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}/[A-Za-z0-9][A-Za-z0-9.+_-]{0,63}$`)
