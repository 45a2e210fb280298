package renderer

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// logTestSettings are the default Config with --access-log as flag, and
// the default settings changed by set.
func logTestSettings(flag bool, set func(*bus.Settings)) (Config, bus.Settings) {
	cfg := DefaultConfig()
	cfg.AccessLog = flag
	s := bus.DefaultSettings()
	set(&s)
	return cfg, s
}

// TestHTTPAccessLog: the http block's access_log line and skip map as
// ingress-nginx's template decides them from the access log keys.
func TestHTTPAccessLog(t *testing.T) {
	tests := []struct {
		name      string
		flag      bool // --access-log
		set       func(*bus.Settings)
		accessLog string
		source    string // the key the line is attributed to
		loggable  string // the skip map's default, "" without the map
	}{
		{"no file anywhere", false, func(*bus.Settings) {}, "off", "access-log-path", ""},
		{"the flag's file", true, func(*bus.Settings) {}, "logs/access.log upstreaminfo", "switchyard", ""},
		{"access-log-path", true, func(s *bus.Settings) { s.AccessLogPath = "/a.log" }, `"/a.log" upstreaminfo`, "access-log-path", ""},
		{"http-access-log-path wins", true, func(s *bus.Settings) { s.AccessLogPath, s.HTTPAccessLogPath = "/a.log", "/h.log" },
			`"/h.log" upstreaminfo`, "http-access-log-path", ""},
		{"disable-http-access-log", true, func(s *bus.Settings) { s.DisableHTTPAccessLog, s.HTTPAccessLogPath = true, "/h.log" },
			"off", "disable-http-access-log", ""},
		{"disable-access-log", true, func(s *bus.Settings) { s.DisableAccessLog = true }, "off", "access-log-path", ""},
		{"params", true, func(s *bus.Settings) {
			s.AccessLogParams = bus.AccessLogParams{Buffer: "16k", Gzip: "gzip", Flush: "1m"}
		},
			"logs/access.log upstreaminfo buffer=16k gzip flush=1m", "access-log-params", ""},
		{"if=", true, func(s *bus.Settings) { s.AccessLogParams = bus.AccessLogParams{If: "http_x_log"} },
			"logs/access.log upstreaminfo if=$http_x_log", "access-log-params", ""},
		{"skip URLs", true, func(s *bus.Settings) { s.SkipAccessLogURLs = []string{"/healthz"} },
			"logs/access.log upstreaminfo if=$switchyard_loggable", "switchyard", "1"},
		{"skip URLs and if=: the map falls back to the variable", true, func(s *bus.Settings) {
			s.SkipAccessLogURLs, s.AccessLogParams = []string{"/healthz"}, bus.AccessLogParams{Buffer: "8k", If: "log_me"}
		}, "logs/access.log upstreaminfo buffer=8k if=$switchyard_loggable", "access-log-params", "$log_me"},
		{"syslog instead of the file, without buffering", true, func(s *bus.Settings) {
			s.AccessLogPath, s.AccessLogParams = "/a.log", bus.AccessLogParams{Buffer: "8k", Flush: "1m", If: "log_me"}
			s.Syslog = bus.SyslogSettings{Enable: true, Host: "10.0.0.9", Port: 514}
		}, "syslog:server=10.0.0.9:514 upstreaminfo if=$log_me", "enable-syslog", ""},
		{"syslog to a host name, with skip URLs", false, func(s *bus.Settings) {
			s.SkipAccessLogURLs, s.Syslog = []string{"/healthz"}, bus.SyslogSettings{Enable: true, Host: "logs.example.com", Port: 5140}
		}, "syslog:server=logs.example.com:5140 upstreaminfo if=$switchyard_loggable", "enable-syslog", "1"},
		{"syslog to an IPv6 address", false, func(s *bus.Settings) { s.Syslog = bus.SyslogSettings{Enable: true, Host: "fd00::1", Port: 514} },
			"syslog:server=[fd00::1]:514 upstreaminfo", "enable-syslog", ""},
		{"syslog host without enable-syslog", true, func(s *bus.Settings) { s.Syslog.Host = "10.0.0.9" },
			"logs/access.log upstreaminfo", "switchyard", ""},
		{"disable-access-log wins over syslog", true, func(s *bus.Settings) {
			s.DisableAccessLog, s.Syslog = true, bus.SyslogSettings{Enable: true, Host: "10.0.0.9", Port: 514}
		}, "off", "access-log-path", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, s := logTestSettings(tt.flag, tt.set)
			v := mainView{}
			if err := newHTTPView(&v, cfg, s, sources{settings: &s}); err != nil {
				t.Fatal(err)
			}
			if v.AccessLog != tt.accessLog {
				t.Errorf("access_log %s, want %s", v.AccessLog, tt.accessLog)
			}
			if !strings.Contains(v.HTTP.Src.AccessLogPath, tt.source) {
				t.Errorf("attributed %q, want %s", v.HTTP.Src.AccessLogPath, tt.source)
			}
			if v.HTTP.LoggableDefault != tt.loggable {
				t.Errorf("skip map default %q, want %q", v.HTTP.LoggableDefault, tt.loggable)
			}
		})
	}
}

// TestHTTPViewRefusesUncheckedValues: what the translator lets through is
// checked again before it is written.
func TestHTTPViewRefusesUncheckedValues(t *testing.T) {
	for name, set := range map[string]func(*bus.Settings){
		"buffer": func(s *bus.Settings) { s.AccessLogParams.Buffer = "16k; include /x" },
		"gzip":   func(s *bus.Settings) { s.AccessLogParams.Gzip = "gzip=1 x" },
		"flush":  func(s *bus.Settings) { s.AccessLogParams.Flush = "5s;" },
		"if":     func(s *bus.Settings) { s.AccessLogParams.If = "a;b" },
		"syslog host": func(s *bus.Settings) {
			s.Syslog = bus.SyslogSettings{Enable: true, Host: "a.example.com,facility=x", Port: 514}
		},
		"syslog port":  func(s *bus.Settings) { s.Syslog = bus.SyslogSettings{Enable: true, Host: "a.example.com", Port: 70000} },
		"gzip-disable": func(s *bus.Settings) { s.UseGzip, s.GzipDisable = true, `a"; include /x; "` },
		"gzip-disable escape": func(s *bus.Settings) {
			s.UseGzip, s.GzipDisable = true, `a\\`
		},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := DefaultConfig()
			s := bus.DefaultSettings()
			set(&s)
			if err := newHTTPView(&mainView{}, cfg, s, sources{settings: &s}); err == nil {
				t.Fatal("written")
			}
		})
	}
}

func TestGzipDisableOnlyWithGzip(t *testing.T) {
	s := bus.DefaultSettings()
	s.GzipDisable = "msie6"
	v := mainView{}
	if err := newHTTPView(&v, DefaultConfig(), s, sources{settings: &s}); err != nil || v.HTTP.GzipDisable != "" {
		t.Fatalf("gzip off: %q, %v", v.HTTP.GzipDisable, err)
	}
	s.UseGzip = true
	if err := newHTTPView(&v, DefaultConfig(), s, sources{settings: &s}); err != nil || v.HTTP.GzipDisable != `"msie6"` {
		t.Fatalf("gzip on: %q, %v", v.HTTP.GzipDisable, err)
	}
}

// TestDefaultBackendAccessLog: only the catch-all's own default location
// (no Ingress asked for it) stops logging, unless
// enable-access-log-for-default-backend; an Ingress's locations, and the
// default location of a host, log as before.
func TestDefaultBackendAccessLog(t *testing.T) {
	root := bus.Location{Path: "/", PathType: bus.PathPrefix}
	owned := bus.Location{Path: "/", PathType: bus.PathPrefix, Backend: "default-web-80", Ingress: "default/web"}
	tests := []struct {
		name   string
		host   string
		loc    bus.Location
		enable bool
		off    bool
	}{
		{"catch-all default location", bus.DefaultServerName, root, false, true},
		{"catch-all default location, key on", bus.DefaultServerName, root, true, false},
		{"catch-all of a rule-less Ingress", bus.DefaultServerName, owned, false, false},
		{"a host's default location", "app.example.com", root, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := bus.DefaultSettings()
			s.EnableAccessLogForDefaultBackend = tt.enable
			server := &bus.Server{Hostname: tt.host, Locations: []bus.Location{tt.loc}}
			v, err := newServerView(DefaultConfig(), s, server, backendContext{}, sources{})
			if err != nil {
				t.Fatal(err)
			}
			if got := v.Locations[0].DefaultBackendLogOff; got != tt.off {
				t.Errorf("access log off %v, want %v", got, tt.off)
			}
		})
	}
}

// TestResolverArgs: ingress-nginx's resolver line, with and without
// disable-ipv6-dns.
func TestResolverArgs(t *testing.T) {
	tests := []struct {
		servers []string
		noIPv6  bool
		want    string
	}{
		{nil, false, ""},
		{[]string{"10.96.0.10", "[fd00::10]:53"}, false, "10.96.0.10 [fd00::10]:53 valid=30s"},
		{[]string{"10.96.0.10", "[fd00::10]:53"}, true, "10.96.0.10 valid=30s ipv6=off"},
		// A resolver needs a nameserver: the IPv6 ones stay when they are all.
		{[]string{"[fd00::10]"}, true, "[fd00::10] valid=30s ipv6=off"},
	}
	for _, tt := range tests {
		if got := resolverArgs(tt.servers, tt.noIPv6); got != tt.want {
			t.Errorf("resolverArgs(%v, %v) = %q, want %q", tt.servers, tt.noIPv6, got, tt.want)
		}
	}
}
