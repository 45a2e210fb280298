package renderer

import (
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestProxyDirectives(t *testing.T) {
	intp := func(n int) *int { return &n }
	def := bus.DefaultSettings()
	tests := []struct {
		name    string
		p       bus.Proxy
		s       func(*bus.Settings)
		want    []string
		wantErr string
	}{
		{name: "nothing", p: bus.Proxy{}},
		{name: "body and timeouts", p: bus.Proxy{BodySize: "30m", ReadTimeout: 1, NextUpstreamTries: intp(0)},
			want: []string{"client_max_body_size 30m", "proxy_read_timeout 1s", "proxy_next_upstream_tries 0"}},
		{name: "buffers number alone takes the ConfigMap's size", p: bus.Proxy{BuffersNumber: 8},
			want: []string{"proxy_buffer_size 4k", "proxy_buffers 8 4k", "proxy_busy_buffers_size 8k"}},
		{name: "two buffers: busy kept to one", p: bus.Proxy{BufferSize: "16k", BuffersNumber: 2},
			want: []string{"proxy_buffer_size 16k", "proxy_buffers 2 16k", "proxy_busy_buffers_size 16k"}},
		{name: "buffer size with the ConfigMap's two buffers", p: bus.Proxy{BufferSize: "8k"}, s: func(s *bus.Settings) { s.ProxyBuffersNumber = 2 },
			want: []string{"proxy_buffer_size 8k", "proxy_buffers 2 8k", "proxy_busy_buffers_size 8k"}},
		{name: "busy over all buffers but one", p: bus.Proxy{BusyBuffersSize: "16k"}, wantErr: "as NGINX requires"},
		{name: "busy under one buffer", p: bus.Proxy{BufferSize: "16k", BusyBuffersSize: "8k"}, wantErr: "as NGINX requires"},
		{name: "temp file under the buffer", p: bus.Proxy{MaxTempFileSize: "1k"}, wantErr: "0 or at least"},
		{name: "temp file off", p: bus.Proxy{MaxTempFileSize: "0"}, want: []string{"proxy_max_temp_file_size 0"}},
		{name: "cookies quoted", p: bus.Proxy{CookieDomain: "a.local example.com", CookiePath: "off"},
			want: []string{`proxy_cookie_domain "a.local" "example.com"`, "proxy_cookie_path off"}},
		{name: "redirect from a URL, to from the ConfigMap's off", p: bus.Proxy{RedirectFrom: "http://a.local/"}},
		{name: "redirect to with the ConfigMap's URL", p: bus.Proxy{RedirectTo: "/x/"}, s: func(s *bus.Settings) { s.ProxyRedirectFrom = "http://a.local/" },
			want: []string{`proxy_redirect "http://a.local/" "/x/"`}},
		{name: "redirect default", p: bus.Proxy{RedirectFrom: "default"}, want: []string{"proxy_redirect default"}},
		{name: "unsafe word refused", p: bus.Proxy{BodySize: "1m;"}, wantErr: "refusing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := def
			if tt.s != nil {
				tt.s(&s)
			}
			got, err := proxyDirectives(tt.p, s)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestNewProxyView(t *testing.T) {
	f := &bus.Features{Proxy: &bus.Proxy{Buffering: "off", RedirectFrom: "default", UpstreamVhost: "b.local:8080", ConnectionHeader: "close"}}
	v, err := newProxyView(f, bus.DefaultSettings(), true)
	if err != nil {
		t.Fatal(err)
	}
	// limit-rate turns buffering on itself; proxy_redirect goes after proxy_pass.
	if len(v.Lines) != 0 || v.Redirect != "proxy_redirect default" || v.UpstreamVhost != `"b.local:8080"` || v.ConnectionHeader != `"close"` {
		t.Fatalf("view %+v", v)
	}
	if v, err := newProxyView(&bus.Features{}, bus.DefaultSettings(), false); v != nil || err != nil {
		t.Fatalf("no proxy group: %+v, %v", v, err)
	}
}

// TestHTTPProxyLinesDefaults: the http block's lines at ingress-nginx's
// defaults, each attributed.
func TestHTTPProxyLinesDefaults(t *testing.T) {
	lines, err := newHTTPProxyLines(bus.DefaultSettings(), sources{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range lines {
		if l.Src == "" {
			t.Errorf("%s: no source", l.Line)
		}
		got = append(got, l.Line)
	}
	want := []string{"client_max_body_size 1m", "client_body_buffer_size 8k", "proxy_buffering off", "proxy_buffer_size 4k",
		"proxy_buffers 4 4k", "proxy_busy_buffers_size 8k", "proxy_max_temp_file_size 1024m", "proxy_request_buffering on",
		"proxy_connect_timeout 5s", "proxy_send_timeout 60s", "proxy_read_timeout 60s", "proxy_next_upstream error timeout",
		"proxy_next_upstream_timeout 0s", "proxy_next_upstream_tries 3", "proxy_http_version 1.1", "proxy_cookie_domain off",
		"proxy_cookie_path off", "proxy_redirect off", "port_in_redirect off", "absolute_redirect on"}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}
