package translator

import (
	"strings"

	"switchyard.dev/switchyard/bus"
)

var httpSettingsCases = map[string]keyCases{
	"use-gzip":                      boolCases(false, func(s *bus.Settings) *bool { return &s.UseGzip }),
	"enable-brotli":                 boolCases(false, func(s *bus.Settings) *bool { return &s.EnableBrotli }),
	"disable-access-log":            boolCases(false, func(s *bus.Settings) *bool { return &s.DisableAccessLog }),
	"log-format-escape-json":        boolCases(false, func(s *bus.Settings) *bool { return &s.LogFormatEscapeJSON }),
	"log-format-escape-none":        boolCases(false, func(s *bus.Settings) *bool { return &s.LogFormatEscapeNone }),
	"proxy-add-original-uri-header": boolCases(false, func(s *bus.Settings) *bool { return &s.ProxyAddOriginalURIHeader }),

	"gzip-level": intCases("1", func(s *bus.Settings) *int { return &s.GzipLevel },
		[]int{1, 5, 9}, []string{"0", "10", "-1", "5;"}),
	"gzip-min-length": intCases("256", func(s *bus.Settings) *int { return &s.GzipMinLength },
		[]int{0, 1000, 1 << 30}, []string{"1073741825", "1k", "-1"}),
	"brotli-level": intCases("4", func(s *bus.Settings) *int { return &s.BrotliLevel },
		[]int{0, 6, 11}, []string{"12", "-1"}),
	"brotli-min-length": intCases("20", func(s *bus.Settings) *int { return &s.BrotliMinLength },
		[]int{0, 100, 1 << 30}, []string{"1073741825", "20b"}),

	"gzip-types": keyCases{def: strings.Join(bus.DefaultCompressibleTypes, " "),
		valid: []valid{
			{"text/html", setStrings(gzipTypesField, "text/html")},
			{" text/css   application/json ", setStrings(gzipTypesField, "text/css", "application/json")},
			{"*", setStrings(gzipTypesField, "*")},
			{"application/vnd.api+json text/*", setStrings(gzipTypesField, "application/vnd.api+json", "text/*")},
		},
		invalid: []string{"", "text", "text/css;", "text/css,application/json", "$type/x", "text/{a}", "'text/css'",
			"/css", "text/", strings.Repeat("text/css ", 65), "text/css\ngzip off"},
	},
	"brotli-types": keyCases{def: "application/xml+rss " + strings.Join(bus.DefaultCompressibleTypes, " "),
		valid:   []valid{{"text/plain", setStrings(brotliTypesField, "text/plain")}},
		invalid: []string{"", "text/plain;", "a b"},
	},
	"gzip-disable": keyCases{def: "",
		valid: []valid{
			{"", setString(gzipDisableField, "")},
			{"msie6", setString(gzipDisableField, "msie6")},
			{`MSIE [1-6]\.`, setString(gzipDisableField, `MSIE [1-6]\.`)},
			{"^curl/", setString(gzipDisableField, "^curl/")},
			{"Trident|Edge", setString(gzipDisableField, "Trident|Edge")},
		},
		invalid: []string{`a"b`, `a\\b`, "*msie", "(a+)+$", `a\nb`, `a\tb`, `a\x00`, "(", `a\`, strings.Repeat("a", 257),
			"a\nb", "é", "a{1,100000}"},
	},
	"access-log-path": keyCases{def: "",
		valid: []valid{
			{"/var/log/nginx/access.log", setString(accessLogPathField, "/var/log/nginx/access.log")},
			{"/dev/stdout", setString(accessLogPathField, "/dev/stdout")},
			{"", setString(accessLogPathField, "")},
		},
		invalid: []string{"access.log", "/var/log/../etc/passwd", "/var/log/a b", "/var/log/a;", "syslog:server=x",
			"/var/log/$host.log", "/" + strings.Repeat("a", 1024), "/a'b"},
	},
	"skip-access-log-urls": keyCases{def: "",
		valid: []valid{
			{"", setEmpty(skipURLsField)},
			{"/healthz, /metrics,/healthz", setStrings(skipURLsField, "/healthz", "/metrics")},
			{"/ping?full=1&x=2", setStrings(skipURLsField, "/ping?full=1&x=2")},
		},
		invalid: []string{"healthz", "/a b", "/a;b", "/$uri", "/a\"b", "/{x}", "~^/regex", "/a\\b"},
	},
	"hide-headers": keyCases{def: "",
		valid: []valid{
			{"", setEmpty(hideHeadersField)},
			{"X-Powered-By, Server", setStrings(hideHeadersField, "X-Powered-By", "Server")},
		},
		invalid: []string{"X Powered", "X-A;", "$h", "X-A:b", "a\"b", "a\nb"},
	},
	"add-headers": keyCases{def: "",
		valid: []valid{
			{"ingress-nginx/custom-headers", setString(addHeadersField, "ingress-nginx/custom-headers")},
			{"", setString(addHeadersField, "")},
		},
		invalid: []string{"custom-headers", "a/b/c", "A/b", "ns/name;", "ns/-x", "ns /x", "../x"},
	},
	"proxy-set-headers": keyCases{def: "",
		valid:   []valid{{"ns/proxy-headers.v1", setString(proxySetHeadersField, "ns/proxy-headers.v1")}},
		invalid: []string{"ns", "ns/$x", "ns/x y"},
	},
}

func gzipTypesField(s *bus.Settings) *[]string     { return &s.GzipTypes }
func brotliTypesField(s *bus.Settings) *[]string   { return &s.BrotliTypes }
func skipURLsField(s *bus.Settings) *[]string      { return &s.SkipAccessLogURLs }
func hideHeadersField(s *bus.Settings) *[]string   { return &s.HideHeaders }
func accessLogPathField(s *bus.Settings) *string   { return &s.AccessLogPath }
func addHeadersField(s *bus.Settings) *string      { return &s.AddHeaders }
func proxySetHeadersField(s *bus.Settings) *string { return &s.ProxySetHeaders }

func setEmpty(field func(*bus.Settings) *[]string) func(*bus.Settings) {
	return func(s *bus.Settings) { *field(s) = []string{} }
}
