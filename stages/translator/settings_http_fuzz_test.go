package translator

import (
	"maps"
	"slices"
	"strings"
	"testing"
	"unicode"

	"switchyard.dev/switchyard/bus"
)

// FuzzParseHTTPSettings feeds arbitrary values to the http{}-level keys
// (compression, access log, headers): whatever is accepted must be one
// NGINX word free of syntax, a header token, or a ConfigMap reference.
func FuzzParseHTTPSettings(f *testing.F) {
	keys := slices.Sorted(maps.Keys(httpSettings))
	for i, v := range []string{"text/css application/json", "*", "/var/log/x.log", "/healthz,/ping?x=1", "X-Powered-By,Server",
		"ns/name", "9", "true", "text/css;gzip off", "/a/../b", "ns/$x", "a\nb"} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, pick uint8, value string) {
		key := keys[int(pick)%len(keys)]
		got, problems := parseSettings(map[string]string{key: value})
		if len(problems) > 1 {
			t.Fatalf("%d problems for one key", len(problems))
		}
		checkHTTPSettingsSafe(t, got.HTTPSettings)
	})
}

func checkHTTPSettingsSafe(t *testing.T, s bus.HTTPSettings) {
	t.Helper()
	for _, h := range s.HideHeaders {
		if !headerNamePattern.MatchString(h) || strings.ContainsAny(h, "$;{}\\\"") {
			t.Fatalf("header name %q accepted", h)
		}
	}
	words := append(append(append([]string{}, s.GzipTypes...), s.BrotliTypes...), s.SkipAccessLogURLs...)
	if s.AccessLogPath != "" {
		words = append(words, s.AccessLogPath)
	}
	for _, ref := range []string{s.AddHeaders, s.ProxySetHeaders} {
		if ref != "" {
			words = append(words, ref)
		}
	}
	for _, w := range words {
		if w == "" || len(w) > 1024 || strings.ContainsAny(w, settingsWordForbidden) || strings.ContainsFunc(w, unicode.IsSpace) ||
			strings.ContainsFunc(w, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
			t.Fatalf("%q accepted", w)
		}
	}
	if strings.Contains(s.AccessLogPath, "..") && slices.Contains(strings.Split(s.AccessLogPath, "/"), "..") {
		t.Fatalf("access log path %q accepted", s.AccessLogPath)
	}
	if s.GzipLevel < 1 || s.GzipLevel > 9 || s.BrotliLevel < 0 || s.BrotliLevel > 11 {
		t.Fatalf("levels %d, %d accepted", s.GzipLevel, s.BrotliLevel)
	}
}
