package translator

import (
	"switchyard.dev/switchyard/bus"
	"testing"
)

// proxySettingsCases is the table of bus.ProxySettings' keys.
var proxySettingsCases = map[string]keyCases{
	"proxy-body-size": stringCasesCanon("1m", func(s *bus.Settings) *string { return &s.ProxyBodySize },
		map[string]string{"0": "0", "8m": "8m", "512k": "512k", "1G": "1g", "100": "100", "1024g": "1024g", "30M": "30m"},
		[]string{"1mb", "1.5m", "-1", "100000000g", "1025g", "1 m", "m", "1m;", "1t", ""}),
	"proxy-max-temp-file-size": stringCasesCanon("1024m", func(s *bus.Settings) *string { return &s.ProxyMaxTempFileSize },
		map[string]string{"0": "0", "2g": "2g", "512m": "512m"},
		[]string{"2gb", "x", "2000g", "1m;"}),
	"client-body-buffer-size": stringCasesCanon("8k", func(s *bus.Settings) *string { return &s.ClientBodyBufferSize },
		map[string]string{"16k": "16k", "1M": "1m", "256m": "256m", "100": "100"},
		[]string{"0", "1g", "257m", "8kb", "8k 8k"}),
	"proxy-buffer-size": stringCasesCanon("4k", func(s *bus.Settings) *string { return &s.ProxyBufferSize },
		map[string]string{"16k": "16k", "128k": "128k"},
		[]string{"0", "1g", "16 k", "$x"}),
	"proxy-busy-buffers-size": stringCasesCanon("", func(s *bus.Settings) *string { return &s.ProxyBusyBuffersSize },
		map[string]string{"": "", "8k": "8k", "12K": "12k"},
		[]string{"0", "1g", "8 k", "$x"}),
	"client-header-buffer-size": stringCasesCanon("1k", func(s *bus.Settings) *string { return &s.ClientHeaderBufferSize },
		map[string]string{"2k": "2k", "64k": "64k"},
		[]string{"0", "2kb", "1g"}),
	"proxy-buffers-number": intCases("4", func(s *bus.Settings) *int { return &s.ProxyBuffersNumber },
		[]int{2, 8, 1024}, []string{"0", "1", "1025"}),
	"proxy-buffering": stringCases("off", func(s *bus.Settings) *string { return &s.ProxyBuffering },
		[]string{"on", "off"}, []string{"true", "ON", "", "on;"}),
	"proxy-request-buffering": stringCases("on", func(s *bus.Settings) *string { return &s.ProxyRequestBuffering },
		[]string{"on", "off"}, []string{"false", "Off", ""}),

	"proxy-connect-timeout": secondsCases("5", func(s *bus.Settings) *int { return &s.ProxyConnectTimeout },
		[]int{1, 30, 3600, 31536000}, []string{"0", "31536001"}),
	"proxy-send-timeout": secondsCases("60", func(s *bus.Settings) *int { return &s.ProxySendTimeout },
		[]int{1, 120, 2592000}, []string{"0", "31536001", "1m"}),
	"proxy-read-timeout": secondsCases("60", func(s *bus.Settings) *int { return &s.ProxyReadTimeout },
		[]int{1, 600, 2592000}, []string{"0", "9999999999", "60.5"}),
	"proxy-next-upstream-timeout": secondsCases("0", func(s *bus.Settings) *int { return &s.ProxyNextUpstreamTimeout },
		[]int{0, 10, 604800}, []string{"31536001", "10ms"}),
	"use-port-in-redirects": boolCases(false, func(s *bus.Settings) *bool { return &s.UsePortInRedirects }),
	"relative-redirects":    boolCases(false, func(s *bus.Settings) *bool { return &s.RelativeRedirects }),
	"proxy-next-upstream-tries": intCases("3", func(s *bus.Settings) *int { return &s.ProxyNextUpstreamTries },
		[]int{0, 1, 100}, []string{"101", "3x"}),
	"proxy-next-upstream": stringCasesCanon("error timeout", func(s *bus.Settings) *string { return &s.ProxyNextUpstream },
		map[string]string{"error timeout http_502": "error timeout http_502", "off": "off", "error  error non_idempotent": "error non_idempotent"},
		[]string{"", "http_418", "error,timeout", "error; x", "Error"}),

	"proxy-http-version": stringCases("1.1", func(s *bus.Settings) *string { return &s.ProxyHTTPVersion },
		[]string{"1.0", "1.1"}, []string{"2", "1", "1.1;", "HTTP/1.1"}),
	"proxy-cookie-domain": stringCasesCanon("off", func(s *bus.Settings) *string { return &s.ProxyCookieDomain },
		map[string]string{"localhost example.org": "localhost example.org", "a.local  .example.org": "a.local .example.org"},
		[]string{"", "example.org", "a b c", "$host example.org", "a;b c"}),
	"proxy-cookie-path": stringCasesCanon("off", func(s *bus.Settings) *string { return &s.ProxyCookiePath },
		map[string]string{"/one/ /": "/one/ /"},
		[]string{"/one", "one /", "~^/a /b", "/a /$b"}),
	"proxy-redirect-from": stringCases("off", func(s *bus.Settings) *string { return &s.ProxyRedirectFrom },
		[]string{"default", "http://internal:8080/", "/app/"}, []string{"", "~^http://x/", "http://x/$1", "a b", "x"}),
	"proxy-redirect-to": stringCases("off", func(s *bus.Settings) *string { return &s.ProxyRedirectTo },
		[]string{"https://example.com/", "/"}, []string{"", "default", "/a;b", `"x"`}),

	"keep-alive": intCases("75", func(s *bus.Settings) *int { return &s.KeepAlive },
		[]int{0, 30, 86400}, []string{"86401", "75s"}),
	"keep-alive-requests": intCases("1000", func(s *bus.Settings) *int { return &s.KeepAliveRequests },
		[]int{1, 10000}, []string{"0", "10000001"}),
	"client-header-timeout": intCases("60", func(s *bus.Settings) *int { return &s.ClientHeaderTimeout },
		[]int{1, 3600}, []string{"0", "3601"}),
	"client-body-timeout": intCases("60", func(s *bus.Settings) *int { return &s.ClientBodyTimeout },
		[]int{1, 3600}, []string{"0", "60s"}),
	"http2-max-concurrent-streams": intCases("128", func(s *bus.Settings) *int { return &s.HTTP2MaxConcurrentStreams },
		[]int{1, 1000, 100000}, []string{"0", "100001"}),
	"large-client-header-buffers": stringCasesCanon("4 8k", func(s *bus.Settings) *string { return &s.LargeClientHeaderBuffers },
		map[string]string{"8 16k": "8 16k", "2  1M": "2 1m"},
		[]string{"", "8k", "0 8k", "4 0", "4 1g", "4 8k 1", "4;8k"}),

	"variables-hash-bucket-size": intCases("256", func(s *bus.Settings) *int { return &s.VariablesHashBucketSize },
		[]int{64, 512}, []string{"32", "65537"}),
	"variables-hash-max-size": intCases("2048", func(s *bus.Settings) *int { return &s.VariablesHashMaxSize },
		[]int{512, 4096}, []string{"0", "16777217"}),
	"server-name-hash-bucket-size": intCases("128", func(s *bus.Settings) *int { return &s.ServerNameHashBucketSize },
		[]int{64, 256}, []string{"32", "65537"}),
	"server-name-hash-max-size": intCases("65536", func(s *bus.Settings) *int { return &s.ServerNameHashMaxSize },
		[]int{1024, 131072}, []string{"100", "16777217"}),
	"max-worker-connections": intCases("16384", func(s *bus.Settings) *int { return &s.MaxWorkerConnections },
		[]int{0, 1024, 65536}, []string{"1048577"}),
	"max-worker-open-files": intCases("0", func(s *bus.Settings) *int { return &s.MaxWorkerOpenFiles },
		[]int{0, 65535}, []string{"1048577"}),
	"reuse-port": boolCases(true, func(s *bus.Settings) *bool { return &s.ReusePort }),
}

// stringCasesCanon: each valid input is stored as its canonical spelling.
func stringCasesCanon(def string, field func(*bus.Settings) *string, good map[string]string, bad []string) keyCases {
	c := keyCases{def: def, invalid: bad}
	for in, want := range good {
		c.valid = append(c.valid, valid{in, setString(field, want)})
	}
	return c
}

// TestProxyBuffersFitTogether: buffer keys valid one by one but not
// together (NGINX would refuse them) fall back to their defaults with a
// Problem each, so the configuration still renders.
func TestProxyBuffersFitTogether(t *testing.T) {
	s, problems := parseSettings(map[string]string{"proxy-busy-buffers-size": "100m", "proxy-max-temp-file-size": "1k"})
	if s.ProxyBusyBuffersSize != "" || s.ProxyMaxTempFileSize != bus.DefaultSettings().ProxyMaxTempFileSize {
		t.Errorf("busy %q, max temp %q: want the defaults", s.ProxyBusyBuffersSize, s.ProxyMaxTempFileSize)
	}
	if len(problems) != 2 || problems[0].Field != "data.proxy-busy-buffers-size" || problems[1].Field != "data.proxy-max-temp-file-size" {
		t.Errorf("problems %+v, want one for each key", problems)
	}
	s, problems = parseSettings(map[string]string{"proxy-buffer-size": "16k", "proxy-busy-buffers-size": "32k", "proxy-max-temp-file-size": "0"})
	if len(problems) != 0 || s.ProxyBusyBuffersSize != "32k" {
		t.Errorf("fitting buffers refused: %+v", problems)
	}
}
