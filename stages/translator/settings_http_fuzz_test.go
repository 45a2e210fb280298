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
// NGINX word free of syntax, a header token, a ConfigMap reference, a safe
// regex that stays inside its quotes, or access_log parameters of their
// own patterns.
func FuzzParseHTTPSettings(f *testing.F) {
	keys := slices.Concat(slices.Collect(maps.Keys(httpSettings)), slices.Collect(maps.Keys(accessLogSettings)))
	slices.Sort(keys)
	for i, v := range []string{"text/css application/json", "*", "/var/log/x.log", "/healthz,/ping?x=1", "X-Powered-By,Server",
		"ns/name", "9", "true", "text/css;gzip off", "/a/../b", "ns/$x", "a\nb", "buffer=16k gzip=5 flush=5s if=$x", "MSIE [1-6]\\.", "msie6"} {
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
	for _, w := range []string{s.AccessLogPath, s.HTTPAccessLogPath, s.AccessLogParams.Buffer, s.AccessLogParams.Gzip, s.AccessLogParams.Flush, s.AccessLogParams.If} {
		if w != "" {
			words = append(words, w)
		}
	}
	if p := s.AccessLogParams; p.If != "" && !logVariablePattern.MatchString("$"+p.If) {
		t.Fatalf("if=%q accepted", p.If)
	}
	if d := s.GzipDisable; d != "" && (strings.ContainsAny(d, "\"\x00\r\n") || strings.Contains(d, `\\`) || strings.HasSuffix(d, `\`) ||
		strings.ContainsFunc(d, func(r rune) bool { return r < 0x20 || r > 0x7e })) {
		t.Fatalf("gzip-disable %q accepted", d)
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
