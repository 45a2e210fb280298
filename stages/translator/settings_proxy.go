package translator

import (
	"regexp"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// proxySettings are the keys of bus.ProxySettings: how NGINX proxies, the
// client side and NGINX's sizes. The proxy-* values are parsed by the same
// functions as the proxy plugin's annotations (bus/features/proxy.go), so
// a ConfigMap and an Ingress accept exactly the same values.
var proxySettings = map[string]settingParser{
	"proxy-body-size":          sizeSetting(func(s *bus.Settings) *string { return &s.ProxyBodySize }, features.ParseBodySize, bodySizeRule),
	"proxy-max-temp-file-size": sizeSetting(func(s *bus.Settings) *string { return &s.ProxyMaxTempFileSize }, features.ParseBodySize, bodySizeRule),
	"client-body-buffer-size":  sizeSetting(func(s *bus.Settings) *string { return &s.ClientBodyBufferSize }, features.ParseBufferSize, bufferSizeRule),
	"proxy-buffer-size":        sizeSetting(func(s *bus.Settings) *string { return &s.ProxyBufferSize }, features.ParseBufferSize, bufferSizeRule),
	"proxy-busy-buffers-size": sizeSetting(func(s *bus.Settings) *string { return &s.ProxyBusyBuffersSize }, emptyOr(features.ParseBufferSize),
		bufferSizeRule+", or empty for twice proxy-buffer-size"),
	"client-header-buffer-size": sizeSetting(func(s *bus.Settings) *string { return &s.ClientHeaderBufferSize }, features.ParseBufferSize, bufferSizeRule),
	"proxy-buffers-number":      intSetting(func(s *bus.Settings) *int { return &s.ProxyBuffersNumber }, 2, features.MaxBuffersNumber, "buffers"),
	"proxy-buffering":           onOffSetting(func(s *bus.Settings) *string { return &s.ProxyBuffering }),
	"proxy-request-buffering":   onOffSetting(func(s *bus.Settings) *string { return &s.ProxyRequestBuffering }),

	"proxy-connect-timeout":       secondsSetting(func(s *bus.Settings) *int { return &s.ProxyConnectTimeout }, 1),
	"proxy-send-timeout":          secondsSetting(func(s *bus.Settings) *int { return &s.ProxySendTimeout }, 1),
	"proxy-read-timeout":          secondsSetting(func(s *bus.Settings) *int { return &s.ProxyReadTimeout }, 1),
	"proxy-next-upstream-timeout": secondsSetting(func(s *bus.Settings) *int { return &s.ProxyNextUpstreamTimeout }, 0),
	"proxy-next-upstream-tries":   intSetting(func(s *bus.Settings) *int { return &s.ProxyNextUpstreamTries }, 0, features.MaxUpstreamTries, "tries, 0 is no limit"),
	"proxy-next-upstream": setting(func(s *bus.Settings) *string { return &s.ProxyNextUpstream },
		"one or more of "+strings.Join(features.NextUpstreamConditions, ", ")+", separated by spaces", errToOK(features.ParseNextUpstream), identity),

	"proxy-http-version": setting(func(s *bus.Settings) *string { return &s.ProxyHTTPVersion }, "1.0 or 1.1", oneOfSetting("1.0", "1.1"), identity),
	"proxy-cookie-domain": setting(func(s *bus.Settings) *string { return &s.ProxyCookieDomain },
		`"off" or two domain names separated by a space`, cookieRewrite(features.CookieDomainPattern), identity),
	"proxy-cookie-path": setting(func(s *bus.Settings) *string { return &s.ProxyCookiePath },
		`"off" or two paths separated by a space`, cookieRewrite(features.CookiePathPattern), identity),
	"proxy-redirect-from": setting(func(s *bus.Settings) *string { return &s.ProxyRedirectFrom },
		`"off", "default", or an http(s) URL or path without ~ at the start, $, quotes, ;, braces or spaces`, redirectSetting("off", "default"), identity),
	"proxy-redirect-to": setting(func(s *bus.Settings) *string { return &s.ProxyRedirectTo },
		`"off", or an http(s) URL or path without $, quotes, ;, braces or spaces`, redirectSetting("off"), identity),

	"keep-alive":                   intSetting(func(s *bus.Settings) *int { return &s.KeepAlive }, 0, 86400, "seconds, 0 disables client keepalive"),
	"keep-alive-requests":          intSetting(func(s *bus.Settings) *int { return &s.KeepAliveRequests }, 1, 10000000, "requests"),
	"client-header-timeout":        intSetting(func(s *bus.Settings) *int { return &s.ClientHeaderTimeout }, 1, 3600, "seconds"),
	"client-body-timeout":          intSetting(func(s *bus.Settings) *int { return &s.ClientBodyTimeout }, 1, 3600, "seconds"),
	"http2-max-concurrent-streams": intSetting(func(s *bus.Settings) *int { return &s.HTTP2MaxConcurrentStreams }, 1, 100000, "streams"),
	"large-client-header-buffers": setting(func(s *bus.Settings) *string { return &s.LargeClientHeaderBuffers },
		`"NUMBER SIZE": 1 to 1024 buffers of 1 byte to 256m (k or m), such as "4 8k"`, parseLargeHeaderBuffers, identity),

	// NGINX refuses a hash it cannot build: the lower bounds keep the
	// sizes Switchyard's own variables and names need.
	"variables-hash-bucket-size":   intSetting(func(s *bus.Settings) *int { return &s.VariablesHashBucketSize }, 64, 65536, "bytes"),
	"variables-hash-max-size":      intSetting(func(s *bus.Settings) *int { return &s.VariablesHashMaxSize }, 512, 1<<24, "entries"),
	"server-name-hash-bucket-size": intSetting(func(s *bus.Settings) *int { return &s.ServerNameHashBucketSize }, 64, 65536, "bytes"),
	"server-name-hash-max-size":    intSetting(func(s *bus.Settings) *int { return &s.ServerNameHashMaxSize }, 512, 1<<24, "entries"),
	"max-worker-connections":       intSetting(func(s *bus.Settings) *int { return &s.MaxWorkerConnections }, 0, 1<<20, "connections, 0 is max-worker-open-files"),
	"max-worker-open-files":        intSetting(func(s *bus.Settings) *int { return &s.MaxWorkerOpenFiles }, 0, 1<<20, "files, 0 keeps the process limit"),
	"reuse-port":                   boolSetting(func(s *bus.Settings) *bool { return &s.ReusePort }),
	"use-port-in-redirects":        boolSetting(func(s *bus.Settings) *bool { return &s.UsePortInRedirects }),
	"relative-redirects":           boolSetting(func(s *bus.Settings) *bool { return &s.RelativeRedirects }),
}

const (
	bodySizeRule   = "an NGINX size up to 1024g such as 1m, 512k or 0 (unlimited): digits and an optional k, m or g"
	bufferSizeRule = "an NGINX buffer size from 1 byte to 256m such as 8k or 1m: digits and an optional k or m"
)

// emptyOr accepts "" (the default) or what parse accepts.
func emptyOr(parse func(string) (string, error)) func(string) (string, error) {
	return func(v string) (string, error) {
		if v == "" {
			return "", nil
		}
		return parse(v)
	}
}

func sizeSetting(field func(*bus.Settings) *string, parse func(string) (string, error), rule string) settingParser {
	return setting(field, rule, errToOK(parse), identity)
}

func onOffSetting(field func(*bus.Settings) *string) settingParser {
	return setting(field, "on or off", oneOfSetting("on", "off"), identity)
}

// errToOK adapts a features parser (which explains its refusal) to the
// settings table (whose rule explains it).
func errToOK(parse func(string) (string, error)) func(string) (string, bool) {
	return func(v string) (string, bool) {
		got, err := parse(v)
		return got, err == nil
	}
}

func oneOfSetting(options ...string) func(string) (string, bool) {
	return func(v string) (string, bool) {
		for _, o := range options {
			if v == o {
				return v, true
			}
		}
		return "", false
	}
}

// cookieRewrite reads proxy-cookie-domain or proxy-cookie-path.
func cookieRewrite(part *regexp.Regexp) func(string) (string, bool) {
	return errToOK(func(v string) (string, error) { return features.ParseCookieRewrite(v, part) })
}

func redirectSetting(keywords ...string) func(string) (string, bool) {
	return func(v string) (string, bool) {
		for _, k := range keywords {
			if v == k {
				return v, true
			}
		}
		return v, len(v) <= 1024 && features.ProxyRedirectPattern.MatchString(v)
	}
}

// parseLargeHeaderBuffers reads "NUMBER SIZE" and writes it single-spaced.
func parseLargeHeaderBuffers(v string) (string, bool) {
	words := strings.Fields(v)
	if len(words) != 2 {
		return "", false
	}
	n, ok := parseIntIn(1, 1024)(words[0])
	size, err := features.ParseBufferSize(words[1])
	if !ok || err != nil {
		return "", false
	}
	return strconv.Itoa(n) + " " + size, true
}

// checkProxyBuffers refuses what NGINX would refuse of the buffer keys
// together (each was valid on its own): the key that does not fit keeps
// its default, reported like any invalid value, so one bad key never stops
// the configuration from rendering.
func checkProxyBuffers(s *bus.Settings) []bus.Problem {
	var problems []bus.Problem
	if s.ProxyBusyBuffersSize != "" {
		if err := features.BusyBuffersFit(s.ProxyBufferSize, s.ProxyBuffersNumber, s.ProxyBusyBuffersSize); err != nil {
			problems = append(problems, bus.Problem{Field: "data.proxy-busy-buffers-size", Reason: ReasonInvalidValue,
				Message: err.Error() + "; the default (twice proxy-buffer-size) is kept"})
			s.ProxyBusyBuffersSize = ""
		}
	}
	if err := features.MaxTempFileFits(s.ProxyMaxTempFileSize, s.ProxyBufferSize); err != nil {
		def := bus.DefaultSettings().ProxyMaxTempFileSize
		problems = append(problems, bus.Problem{Field: "data.proxy-max-temp-file-size", Reason: ReasonInvalidValue,
			Message: err.Error() + "; the default (" + def + ") is kept"})
		s.ProxyMaxTempFileSize = def
	}
	return problems
}
