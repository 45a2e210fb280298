package translator

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

var accessLogSettingsCases = map[string]keyCases{
	"disable-http-access-log":               boolCases(false, func(s *bus.Settings) *bool { return &s.DisableHTTPAccessLog }),
	"enable-access-log-for-default-backend": boolCases(false, func(s *bus.Settings) *bool { return &s.EnableAccessLogForDefaultBackend }),
	"enable-auth-access-log":                boolCases(false, func(s *bus.Settings) *bool { return &s.EnableAuthAccessLog }),
	"enable-syslog":                         boolCases(false, func(s *bus.Settings) *bool { return &s.Syslog.Enable }),
	"syslog-port": intCases("514", func(s *bus.Settings) *int { return &s.Syslog.Port }, []int{1, 514, 65535},
		[]string{"0", "65536", "-1", "514;", "514 x"}),
	"syslog-host": keyCases{def: "",
		valid: stringCases("", syslogHostField, []string{"", "10.0.0.9", "fd00::5", "logs.example.com", "syslog", "syslog.logging.svc.cluster.local", "2001:db8::1"},
			nil).valid,
		invalid: []string{"10.0.0.9:514", "[fd00::5]", "fe80::1%eth0", "a.example.com,facility=local7", "a b", "a;", "-a.example.com",
			"a..example.com", "a.example.com.", "$host", "a_b.example.com", "unix:/dev/log", strings.Repeat("a.", 127) + "a"},
	},
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

// TestCheckSyslog: enable-syslog without syslog-host is reported as having
// no effect, and the renderer keeps the logs where they were (Active).
func TestCheckSyslog(t *testing.T) {
	tests := []struct {
		data    map[string]string
		active  bool
		problem string
	}{
		{map[string]string{"enable-syslog": "true"}, false, "data.syslog-host"},
		{map[string]string{"enable-syslog": "true", "syslog-host": "10.0.0.9"}, true, ""},
		{map[string]string{"enable-syslog": "true", "syslog-host": "10.0.0.9;"}, false, "data.syslog-host"},
		{map[string]string{"syslog-host": "10.0.0.9"}, false, ""},
	}
	for _, tt := range tests {
		s, problems := parseSettings(tt.data)
		if s.Syslog.Active() != tt.active {
			t.Errorf("%v: active %v, want %v", tt.data, s.Syslog.Active(), tt.active)
		}
		var fields []string
		for _, p := range problems {
			fields = append(fields, p.Field)
		}
		if got := strings.Join(fields, ","); got != tt.problem && !(tt.problem != "" && strings.Contains(got, tt.problem)) {
			t.Errorf("%v: problems %v, want one on %q", tt.data, problems, tt.problem)
		}
	}
}

func syslogHostField(s *bus.Settings) *string { return &s.Syslog.Host }
