package renderer

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestStreamLogView(t *testing.T) {
	tests := []struct {
		name      string
		flag      bool // --access-log
		set       func(*bus.Settings)
		accessLog string
		source    string
	}{
		{"no file anywhere", false, func(*bus.Settings) {}, "off", "switchyard"},
		{"the flag's file", true, func(*bus.Settings) {}, `"logs/access.log" log_stream`, "switchyard"},
		{"access-log-path", false, func(s *bus.Settings) { s.AccessLogPath = "/var/log/a.log" }, `"/var/log/a.log" log_stream`, "access-log-path"},
		{"stream-access-log-path wins", true, func(s *bus.Settings) {
			s.AccessLogPath, s.StreamAccessLogPath = "/var/log/a.log", "/var/log/s.log"
		}, `"/var/log/s.log" log_stream`, "stream-access-log-path"},
		{"disable-access-log", true, func(s *bus.Settings) { s.DisableAccessLog, s.StreamAccessLogPath = true, "/s.log" }, "off", "disable-access-log"},
		{"disable-stream-access-log", true, func(s *bus.Settings) { s.DisableStreamAccessLog = true }, "off", "disable-stream-access-log"},
		{"http-access-log-path is the http block's only", true, func(s *bus.Settings) { s.HTTPAccessLogPath = "/h.log" }, `"logs/access.log" log_stream`, "switchyard"},
		{"disable-http-access-log keeps the stream log", true, func(s *bus.Settings) { s.DisableHTTPAccessLog = true }, `"logs/access.log" log_stream`, "switchyard"},
		{"access-log-params without if=", true, func(s *bus.Settings) {
			s.AccessLogParams = bus.AccessLogParams{Buffer: "16k", Gzip: "gzip=3", Flush: "5s", If: "http_x_log"}
		}, `"logs/access.log" log_stream buffer=16k gzip=3 flush=5s`, "access-log-params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, s := logTestSettings(tt.flag, tt.set)
			v, err := newStreamLogView(cfg, s, sources{settings: &s})
			if err != nil {
				t.Fatal(err)
			}
			if v.AccessLog != tt.accessLog {
				t.Errorf("access_log %s, want %s", v.AccessLog, tt.accessLog)
			}
			if !strings.Contains(v.Src.AccessLog, tt.source) {
				t.Errorf("attributed %q, want %s", v.Src.AccessLog, tt.source)
			}
			if v.Format != "'"+bus.DefaultLogFormatStream+"'" {
				t.Errorf("format %s", v.Format)
			}
		})
	}
	// What the translator lets through is checked again here.
	s := bus.DefaultSettings()
	s.LogFormatStream = "$status'; include /etc/passwd; #"
	if _, err := newStreamLogView(DefaultConfig(), s, sources{settings: &s}); err == nil {
		t.Error("a log format that ends its quotes was written")
	}
}
