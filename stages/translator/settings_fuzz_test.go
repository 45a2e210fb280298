package translator

import (
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// settingsWordForbidden are the characters that would let a value written
// unquoted into nginx.conf end its directive or start another.
const settingsWordForbidden = ";{}'\"$\\"

// FuzzParseSettings feeds arbitrary values, under known and arbitrary keys,
// through parseSettings: it must not panic, must be deterministic, and
// whatever it accepts must be safe to write into nginx.conf.
func FuzzParseSettings(f *testing.F) {
	keys := slices.Sorted(maps.Keys(settingParsers))
	seeds := []struct{ key, value string }{
		{"ssl-redirect", "false"}, {"hsts-max-age", "63072000"}, {"proxy-body-size", "8m"},
		{"proxy-read-timeout", "120"}, {"proxy-real-ip-cidr", "10.0.0.0/8,2001:db8::/32"},
		{"upstream-keepalive-time", "1h30m"}, {"worker-processes", "auto"}, {"worker-shutdown-timeout", "10s"},
		{"log-format-upstream", bus.DefaultLogFormatUpstream}, {"log-format-upstream", `{"ip": "${remote_addr}"}`},
		{"log-format-upstream", `'; error_log /etc/passwd; #`}, {"log-format-upstream", "$"},
		{"log-format-stream", bus.DefaultLogFormatStream}, {"log-format-stream", `x'; include /etc/passwd; #`},
		{"ssl-protocols", "TLSv1.2 TLSv1.3"}, {"ssl-ciphers", "HIGH:!aNULL:!MD5"}, {"ssl-ciphers", "x; include /etc/passwd"},
		{"custom-http-errors", "404,503"}, {"proxy-cookie-path", "/a /b"}, {"large-client-header-buffers", "4 8k"},
		{"whitelist-source-range", "10.0.0.0/8, 192.168.1.7"}, {"block-cidrs", "10.0.0.0/8;deny all"},
		{"block-user-agents", "~*(sqlmap|nikto),BadBot/1.0"}, {"block-referers", `~a"; deny all; #`},
		{"proxy-next-upstream", "error timeout"}, {"proxy-redirect-from", "http://a/"}, {"annotations-risk-level", "critical"}, {"use-gzip", "true"},
		{"syslog-host", "fd00::5"}, {"syslog-host", "logs.example.com,facility=x"}, {"syslog-port", "5140"},
		{"forwarded-host-header", "X-Original-Host"}, {"limit-conn-zone-variable", "$http_x_client_id"}, {"limit-conn-zone-variable", "$a $b"},
		{"debug-connections", "127.0.0.1, 10.0.0.0/8, fd00::/8"}, {"debug-connections", "10.0.0.1;error_log /x"}, {"forwarded-host-header", "X-Host;include"},
	}
	for _, s := range seeds {
		if i := slices.Index(keys, s.key); i >= 0 {
			f.Add(uint8(i), "", s.value)
		} else {
			f.Add(uint8(255), s.key, s.value)
		}
	}
	f.Fuzz(func(t *testing.T, pick uint8, key, value string) {
		// Most picks name a known key, so the parsers get most of the work.
		if pick < 200 {
			key = keys[int(pick)%len(keys)]
		}
		data := map[string]string{key: value, "hsts": value}
		got, problems := parseSettings(data)
		again, problemsAgain := parseSettings(data)
		if !reflect.DeepEqual(got, again) || !reflect.DeepEqual(problems, problemsAgain) {
			t.Fatal("parseSettings is not deterministic")
		}
		checkSettingsSafe(t, got)
		for _, p := range problems {
			if hasControl(p.Message) {
				t.Fatalf("raw control character in message %q", p.Message)
			}
		}
	})
}

func checkSettingsSafe(t *testing.T, s bus.Settings) {
	t.Helper()
	if strings.ContainsFunc(s.LogFormatUpstream, func(r rune) bool { return r == '\'' || r == '\\' || r < 0x20 || r == 0x7f }) {
		t.Fatalf("log-format-upstream %q accepted", s.LogFormatUpstream)
	}
	for _, word := range []string{s.SSLCiphers, s.ProxyBodySize, s.UpstreamKeepaliveTime, s.WorkerShutdownTimeout, s.WorkerProcesses} {
		if word == "" || strings.ContainsAny(word, settingsWordForbidden) || strings.ContainsFunc(word, unicode.IsSpace) {
			t.Fatalf("%q accepted", word)
		}
	}
	for _, word := range []string{s.ProxyBufferSize, s.ClientBodyBufferSize, s.ClientHeaderBufferSize, s.ProxyMaxTempFileSize,
		s.ProxyBuffering, s.ProxyRequestBuffering, s.ProxyHTTPVersion, s.ProxyRedirectFrom, s.ProxyRedirectTo} {
		if word == "" || strings.ContainsAny(word, settingsWordForbidden) || strings.ContainsFunc(word, unicode.IsSpace) {
			t.Fatalf("%q accepted", word)
		}
	}
	// Lists of words: single spaces between them, nothing else.
	for _, words := range []string{s.ProxyNextUpstream, s.ProxyCookieDomain, s.ProxyCookiePath, s.LargeClientHeaderBuffers} {
		if words == "" || strings.ContainsAny(words, settingsWordForbidden) || strings.Join(strings.Fields(words), " ") != words {
			t.Fatalf("%q accepted", words)
		}
	}
	// Written unquoted: syslog:server=HOST:PORT and $http_NAME.
	if h := s.Syslog.Host; h != "" && (!bus.ValidSyslogHost(h) || strings.ContainsAny(h, settingsWordForbidden+", ")) {
		t.Fatalf("syslog-host %q accepted", h)
	}
	for _, c := range s.DebugConnections {
		if _, ok := debugConnection(c); !ok || strings.ContainsAny(c, settingsWordForbidden+", ") {
			t.Fatalf("debug connection %q accepted", c)
		}
	}
	if !bus.LimitZoneVariablePattern.MatchString(s.LimitConnZoneVariable) {
		t.Fatalf("limit-conn-zone-variable %q accepted", s.LimitConnZoneVariable)
	}
	if !bus.ForwardedForHeaderPattern.MatchString(s.ForwardedHostHeader) {
		t.Fatalf("forwarded-host-header %q accepted", s.ForwardedHostHeader)
	}
	for _, p := range s.SSLProtocols {
		if !slices.Contains(sslProtocols, p) {
			t.Fatalf("ssl protocol %q accepted", p)
		}
	}
	for _, c := range s.CustomHTTPErrors {
		if c < 400 || c > 599 {
			t.Fatalf("custom http error %d accepted", c)
		}
	}
	for _, c := range s.ProxyRealIPCIDR {
		if _, err := netip.ParsePrefix(c); err != nil {
			t.Fatalf("cidr %q accepted", c)
		}
	}
	for _, list := range [][]string{s.WhitelistSourceRange, s.DenylistSourceRange, s.BlockCIDRs} {
		for _, c := range list {
			if p, err := netip.ParsePrefix(c); err != nil || p.Masked().String() != c {
				t.Fatalf("access cidr %q accepted", c)
			}
		}
	}
	for _, m := range append(slices.Clone(s.BlockUserAgents), s.BlockReferers...) {
		if features.ValidMapMatch(m) != nil || strings.ContainsAny(m, "\"\r\n") {
			t.Fatalf("map source %q accepted", m)
		}
	}
	if !slices.Contains(riskLevels, s.AnnotationsRiskLevel) {
		t.Fatalf("risk level %q accepted", s.AnnotationsRiskLevel)
	}
}
