package translator

import (
	"regexp"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// httpSettings are the http{}-level keys: compression, the access log, and
// headers added to every response or request (bus.HTTPSettings).
var httpSettings = map[string]settingParser{
	"use-gzip":        boolSetting(func(s *bus.Settings) *bool { return &s.UseGzip }),
	"gzip-level":      intSetting(func(s *bus.Settings) *int { return &s.GzipLevel }, 1, 9, "NGINX's gzip_comp_level"),
	"gzip-min-length": intSetting(func(s *bus.Settings) *int { return &s.GzipMinLength }, 0, 1<<30, "bytes"),
	"gzip-types": setting(func(s *bus.Settings) *[]string { return &s.GzipTypes },
		mimeTypesRule, parseMIMETypes, joinWith(" ")),
	"gzip-disable": setting(func(s *bus.Settings) *string { return &s.GzipDisable },
		"msie6, or one regex matched against User-Agent without regard to case (the safe subset of PCRE, at most 256 characters of printable ASCII without a double quote or an escaped backslash), or empty for none",
		parseGzipDisable, identity),
	"enable-brotli":     boolSetting(func(s *bus.Settings) *bool { return &s.EnableBrotli }),
	"brotli-level":      intSetting(func(s *bus.Settings) *int { return &s.BrotliLevel }, 0, 11, "brotli's compression level"),
	"brotli-min-length": intSetting(func(s *bus.Settings) *int { return &s.BrotliMinLength }, 0, 1<<30, "bytes"),
	"brotli-types": setting(func(s *bus.Settings) *[]string { return &s.BrotliTypes },
		mimeTypesRule, parseMIMETypes, joinWith(" ")),

	"access-log-path": setting(func(s *bus.Settings) *string { return &s.AccessLogPath },
		"an absolute file path of 1 to 1024 characters from A-Z a-z 0-9 . _ - / without \"..\", or empty for the --access-log flag's choice",
		parseLogPath, identity),
	"disable-access-log": boolSetting(func(s *bus.Settings) *bool { return &s.DisableAccessLog }),
	"skip-access-log-urls": setting(func(s *bus.Settings) *[]string { return &s.SkipAccessLogURLs },
		"a comma-separated list of at most 256 request URIs, each starting with / and made of A-Z a-z 0-9 and . _ ~ - / % : @ ! + , = ? & (at most 1024 characters each)",
		parseSkipURLs, joinWith(",")),
	"log-format-escape-json": boolSetting(func(s *bus.Settings) *bool { return &s.LogFormatEscapeJSON }),
	"log-format-escape-none": boolSetting(func(s *bus.Settings) *bool { return &s.LogFormatEscapeNone }),

	"add-headers": setting(func(s *bus.Settings) *string { return &s.AddHeaders },
		configMapRefRule, parseConfigMapRef, identity),
	"proxy-set-headers": setting(func(s *bus.Settings) *string { return &s.ProxySetHeaders },
		configMapRefRule, parseConfigMapRef, identity),
	"hide-headers": setting(func(s *bus.Settings) *[]string { return &s.HideHeaders },
		"a comma-separated list of at most 64 HTTP header names (tokens without $, at most 128 characters)", parseHeaderNames, joinWith(",")),
	"proxy-add-original-uri-header": boolSetting(func(s *bus.Settings) *bool { return &s.ProxyAddOriginalURIHeader }),
}

var (
	// mimeTypePattern is a MIME type, or "*" (gzip_types' "any type"):
	// nothing NGINX could read as syntax or a variable.
	mimeTypePattern = regexp.MustCompile(`^(\*|[A-Za-z0-9][A-Za-z0-9.+_-]{0,126}/[A-Za-z0-9*][A-Za-z0-9.+_*-]{0,126})$`)
	mimeTypesRule   = "a space-separated list of 1 to 64 MIME types such as text/css or application/json (or *)"

	logPathPattern = regexp.MustCompile(`^/[A-Za-z0-9._/-]*$`) // length checked apart: Go caps repeats at 1000
	// skipURLPattern: a request URI as $request_uri holds it, written as a
	// quoted map key; no quote, "$", "\", braces, ";" or space.
	skipURLPattern = regexp.MustCompile(`^/[A-Za-z0-9._~%/:@!+,=?&-]*$`) // length checked apart
	// configMapRefPattern is "namespace/name" with Kubernetes' DNS label
	// (namespace) and DNS subdomain (name) rules.
	configMapRefPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
	configMapRefRule    = `"namespace/name" of a ConfigMap, or empty for none`
	// headerNamePattern is an RFC 9110 token without "$", as in bus/features.
	headerNamePattern = regexp.MustCompile(`^[A-Za-z0-9!#%&'*+.^_|~-]{1,128}$`)
)

func parseMIMETypes(v string) ([]string, bool) {
	types := strings.Fields(v)
	if len(types) == 0 || len(types) > 64 {
		return nil, false
	}
	for _, t := range types {
		if !mimeTypePattern.MatchString(t) {
			return nil, false
		}
	}
	return slices.Compact(types), true
}

func parseLogPath(v string) (string, bool) {
	if v == "" {
		return "", true
	}
	return v, len(v) <= 1024 && logPathPattern.MatchString(v) && !slices.Contains(strings.Split(v, "/"), "..")
}

func parseSkipURLs(v string) ([]string, bool) {
	return parseList(v, 256, func(u string) bool { return len(u) <= 1024 && skipURLPattern.MatchString(u) })
}

func parseHeaderNames(v string) ([]string, bool) {
	return parseList(v, 64, headerNamePattern.MatchString)
}

// parseList reads a comma-separated list of at most limit items, each
// trimmed and valid; empty gives an empty list. One bad item refuses the
// whole list, so nothing is dropped in silence.
func parseList(v string, limit int, valid func(string) bool) ([]string, bool) {
	out := []string{}
	if v == "" {
		return out, true
	}
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if !valid(item) || len(out) == limit {
			return nil, false
		}
		if !slices.Contains(out, item) {
			out = append(out, item)
		}
	}
	return out, true
}

func parseConfigMapRef(v string) (string, bool) {
	return v, v == "" || configMapRefPattern.MatchString(v)
}
