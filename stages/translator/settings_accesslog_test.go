package translator

import (
	"strings"

	"switchyard.dev/switchyard/bus"
)

var accessLogSettingsCases = map[string]keyCases{
	"disable-http-access-log":               boolCases(false, func(s *bus.Settings) *bool { return &s.DisableHTTPAccessLog }),
	"enable-access-log-for-default-backend": boolCases(false, func(s *bus.Settings) *bool { return &s.EnableAccessLogForDefaultBackend }),
	"enable-auth-access-log":                boolCases(false, func(s *bus.Settings) *bool { return &s.EnableAuthAccessLog }),
	"http-access-log-path": keyCases{def: "",
		valid: []valid{
			{"/var/log/nginx/http.log", setString(httpAccessLogPathField, "/var/log/nginx/http.log")},
			{"", setString(httpAccessLogPathField, "")},
		},
		invalid: []string{"http.log", "/var/../etc/passwd", "/a b", "/a;", "syslog:server=x", "/$host.log", "/a\"b"},
	},
	"access-log-params": keyCases{def: "",
		valid: []valid{
			{"", setLogParams(bus.AccessLogParams{})},
			{"buffer=16k flush=5s", setLogParams(bus.AccessLogParams{Buffer: "16k", Flush: "5s"})},
			{"  gzip   flush=1m30s ", setLogParams(bus.AccessLogParams{Gzip: "gzip", Flush: "1m30s"})},
			{"if=$loggable gzip=9 buffer=1m", setLogParams(bus.AccessLogParams{Buffer: "1m", Gzip: "gzip=9", If: "loggable"})},
			{"if=$http_x_log", setLogParams(bus.AccessLogParams{If: "http_x_log"})},
		},
		invalid: []string{
			"flush=5s",                                                  // NGINX wants a buffer to flush
			"buffer=16k buffer=32k",                                     // twice
			"gzip gzip=2",                                               // twice
			"buffer=", "buffer", "buffer=0", "buffer=1g", "buffer=16k;", // sizes
			"gzip=0", "gzip=10", "gzip=x",
			"flush=5", "flush=5x", "flush=",
			"if=loggable", "if=$", "if=$a-b", "if=$a$b", "if=${a}", "if=$a;", "if=$" + strings.Repeat("a", 65),
			"format=json", "off", "syslog:server=x", "buffer=16k\nflush=5s;", "buffer=16k;access_log /x", "BUFFER=16k",
		},
	},
}

func httpAccessLogPathField(s *bus.Settings) *string { return &s.HTTPAccessLogPath }
func gzipDisableField(s *bus.Settings) *string       { return &s.GzipDisable }

func setLogParams(p bus.AccessLogParams) func(*bus.Settings) {
	return func(s *bus.Settings) { s.AccessLogParams = p }
}
