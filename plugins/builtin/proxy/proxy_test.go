package proxy

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
)

func intp(n int) *int { return &n }

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		want    *bus.Proxy
		errKeys []string
		errText string
	}{
		{name: "nothing", in: map[string]string{}},
		{name: "body size", in: map[string]string{KeyBodySize: "30m"}, want: &bus.Proxy{BodySize: "30m"}},
		{name: "body size upper case unit", in: map[string]string{KeyBodySize: "8M"}, want: &bus.Proxy{BodySize: "8m"}},
		{name: "body size unlimited", in: map[string]string{KeyBodySize: "0"}, want: &bus.Proxy{BodySize: "0"}},
		{name: "body size 1024g", in: map[string]string{KeyBodySize: "1024g"}, want: &bus.Proxy{BodySize: "1024g"}},
		{name: "body size out of bounds", in: map[string]string{KeyBodySize: "100000000g"}, errKeys: []string{KeyBodySize}, errText: "over the limit of 1024g"},
		{name: "body size with b", in: map[string]string{KeyBodySize: "10mb"}, errKeys: []string{KeyBodySize}},
		{name: "body size injection", in: map[string]string{KeyBodySize: "1m; return 200"}, errKeys: []string{KeyBodySize}},
		{name: "buffers", in: map[string]string{KeyBuffering: "on", KeyBuffersNumber: "8", KeyBufferSize: "16k", KeyBusyBuffersSize: "64k",
			KeyClientBodyBufferSize: "1m", KeyMaxTempFileSize: "0", KeyRequestBuffering: "off"},
			want: &bus.Proxy{Buffering: "on", BuffersNumber: 8, BufferSize: "16k", BusyBuffersSize: "64k", ClientBodyBufferSize: "1m",
				MaxTempFileSize: "0", RequestBuffering: "off"}},
		{name: "buffer size in g refused", in: map[string]string{KeyBufferSize: "1g"}, errKeys: []string{KeyBufferSize}, errText: "unit g"},
		{name: "buffer size 0 refused", in: map[string]string{KeyClientBodyBufferSize: "0"}, errKeys: []string{KeyClientBodyBufferSize}},
		{name: "buffer size over 256m", in: map[string]string{KeyBufferSize: "257m"}, errKeys: []string{KeyBufferSize}},
		{name: "one buffer refused", in: map[string]string{KeyBuffersNumber: "1"}, errKeys: []string{KeyBuffersNumber}},
		{name: "busy buffers too large", in: map[string]string{KeyBuffersNumber: "4", KeyBufferSize: "4k", KeyBusyBuffersSize: "16k"},
			errKeys: []string{KeyBusyBuffersSize}, errText: "as NGINX requires"},
		{name: "buffering bad", in: map[string]string{KeyBuffering: "yes"}, errKeys: []string{KeyBuffering}},
		{name: "timeouts", in: map[string]string{KeyConnectTimeout: "10", KeySendTimeout: "120", KeyReadTimeout: "3600"},
			want: &bus.Proxy{ConnectTimeout: 10, SendTimeout: 120, ReadTimeout: 3600}},
		{name: "timeouts in seconds with an s, as users wrote them for years", in: map[string]string{KeyReadTimeout: "18000s", KeySendTimeout: "2592000", KeyNextUpstreamTimeout: "0s"},
			want: &bus.Proxy{ReadTimeout: 18000, SendTimeout: 2592000, NextUpstreamTimeout: intp(0)}},
		{name: "redirects NGINX makes", in: map[string]string{KeyUsePortInRedirects: "true", KeyRelativeRedirects: "True"},
			want: &bus.Proxy{PortInRedirect: "on", AbsoluteRedirect: "off"}},
		{name: "redirects NGINX makes, defaults said out loud", in: map[string]string{KeyUsePortInRedirects: "false", KeyRelativeRedirects: "0"},
			want: &bus.Proxy{PortInRedirect: "off", AbsoluteRedirect: "on"}},
		{name: "use-port-in-redirects not a boolean", in: map[string]string{KeyUsePortInRedirects: "yes"}, errKeys: []string{KeyUsePortInRedirects}},
		{name: "timeout in minutes refused", in: map[string]string{KeyReadTimeout: "60m"}, errKeys: []string{KeyReadTimeout}},
		{name: "timeout of a bare s refused", in: map[string]string{KeyReadTimeout: "s"}, errKeys: []string{KeyReadTimeout}},
		{name: "timeout 0 refused", in: map[string]string{KeyConnectTimeout: "0"}, errKeys: []string{KeyConnectTimeout}},
		{name: "timeout negative refused", in: map[string]string{KeySendTimeout: "-1"}, errKeys: []string{KeySendTimeout}},
		{name: "timeout over a year refused", in: map[string]string{KeyReadTimeout: "31536001"}, errKeys: []string{KeyReadTimeout}},
		{name: "next upstream", in: map[string]string{KeyNextUpstream: "error  timeout http_502 error", KeyNextUpstreamTries: "0", KeyNextUpstreamTimeout: "10"},
			want: &bus.Proxy{NextUpstream: "error timeout http_502", NextUpstreamTries: intp(0), NextUpstreamTimeout: intp(10)}},
		{name: "next upstream off", in: map[string]string{KeyNextUpstream: "off"}, want: &bus.Proxy{NextUpstream: "off"}},
		{name: "next upstream unknown", in: map[string]string{KeyNextUpstream: "error http_418"}, errKeys: []string{KeyNextUpstream}},
		{name: "tries over 100", in: map[string]string{KeyNextUpstreamTries: "101"}, errKeys: []string{KeyNextUpstreamTries}},
		{name: "http version", in: map[string]string{KeyHTTPVersion: "1.0"}, want: &bus.Proxy{HTTPVersion: "1.0"}},
		{name: "http version 2 refused", in: map[string]string{KeyHTTPVersion: "2.0"}, errKeys: []string{KeyHTTPVersion}},
		{name: "cookie rewrites", in: map[string]string{KeyCookieDomain: "localhost  example.org", KeyCookiePath: "/one/ /"},
			want: &bus.Proxy{CookieDomain: "localhost example.org", CookiePath: "/one/ /"}},
		{name: "cookie off", in: map[string]string{KeyCookieDomain: "off", KeyCookiePath: "off"}, want: &bus.Proxy{CookieDomain: "off", CookiePath: "off"}},
		{name: "cookie one word refused", in: map[string]string{KeyCookieDomain: "example.org"}, errKeys: []string{KeyCookieDomain}},
		{name: "cookie variable refused", in: map[string]string{KeyCookieDomain: "a $host"}, errKeys: []string{KeyCookieDomain}},
		{name: "cookie path regex refused", in: map[string]string{KeyCookiePath: "~*^/a /b"}, errKeys: []string{KeyCookiePath}},
		{name: "redirect", in: map[string]string{KeyRedirectFrom: "http://internal.local:8080/", KeyRedirectTo: "https://example.com/app/"},
			want: &bus.Proxy{RedirectFrom: "http://internal.local:8080/", RedirectTo: "https://example.com/app/"}},
		{name: "redirect default", in: map[string]string{KeyRedirectFrom: "default"}, want: &bus.Proxy{RedirectFrom: "default"}},
		{name: "redirect to without from", in: map[string]string{KeyRedirectTo: "/x"}, errKeys: []string{KeyRedirectTo}},
		{name: "redirect regex refused", in: map[string]string{KeyRedirectFrom: "~^http://(.*)/", KeyRedirectTo: "/$1"}, errKeys: []string{KeyRedirectFrom, KeyRedirectTo}},
		{name: "connection header", in: map[string]string{KeyConnectionHeader: "keep-alive"}, want: &bus.Proxy{ConnectionHeader: "keep-alive"}},
		{name: "connection header injection", in: map[string]string{KeyConnectionHeader: `close"; x`}, errKeys: []string{KeyConnectionHeader}},
		{name: "upstream vhost", in: map[string]string{KeyUpstreamVhost: "backend.example.com:8080"}, want: &bus.Proxy{UpstreamVhost: "backend.example.com:8080"}},
		{name: "upstream vhost ipv6", in: map[string]string{KeyUpstreamVhost: "[::1]:80"}, want: &bus.Proxy{UpstreamVhost: "[::1]:80"}},
		{name: "upstream vhost variable refused", in: map[string]string{KeyUpstreamVhost: "$host"}, errKeys: []string{KeyUpstreamVhost}},
		{name: "service-upstream is the translator's", in: map[string]string{KeyServiceUpstream: "true"}},
		{name: "service-upstream bad", in: map[string]string{KeyServiceUpstream: "yes"}, errKeys: []string{KeyServiceUpstream}},
		{name: "errors reject the whole group", in: map[string]string{KeyBodySize: "30m", KeyReadTimeout: "x"}, errKeys: []string{KeyReadTimeout}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Parse(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse = %+v, want %+v", got, tt.want)
			}
			var keys []string
			for _, e := range errs {
				if e.Warning || e.Message == "" {
					t.Errorf("unexpected %+v", e)
				}
				if tt.errText != "" && !strings.Contains(e.Message, tt.errText) {
					t.Errorf("message %q, want it to say %q", e.Message, tt.errText)
				}
				keys = append(keys, e.Key)
			}
			if !reflect.DeepEqual(keys, tt.errKeys) {
				t.Fatalf("errors %v, want %v", keys, tt.errKeys)
			}
			f := bus.Features{Proxy: got}
			if err := f.Validate(); err != nil {
				t.Fatalf("features refused: %v", err)
			}
		})
	}
}

// TestDescribe: every pattern compiles as the host compiles it, and the
// risk levels are ingress-nginx's.
func TestDescribe(t *testing.T) {
	medium := map[string]bool{KeyBodySize: true, KeyNextUpstream: true, KeyCookieDomain: true, KeyCookiePath: true,
		KeyRedirectFrom: true, KeyRedirectTo: true}
	d := New().Describe()
	if len(d.Annotations) != 24 {
		t.Fatalf("%d annotations", len(d.Annotations))
	}
	for _, a := range d.Annotations {
		re, err := regexp.Compile(`^(?:` + a.Pattern + `)$`)
		if err != nil {
			t.Errorf("%s: %v", a.Key, err)
		}
		if a.Default != "" && !re.MatchString(a.Default) {
			t.Errorf("%s: default %q does not match its pattern", a.Key, a.Default)
		}
		want := plugins.RiskLow
		if medium[a.Key] {
			want = plugins.RiskMedium
		}
		if a.Risk != want {
			t.Errorf("%s: risk %s, want %s", a.Key, a.Risk, want)
		}
	}
}

// FuzzParse: Parse never panics, whatever it returns passes Validate, and
// no accepted value holds a character that could end an NGINX directive.
func FuzzParse(f *testing.F) {
	f.Add(KeyBodySize, "30m")
	f.Add(KeyBodySize, "100000000g")
	f.Add(KeyNextUpstream, "error timeout http_502")
	f.Add(KeyCookiePath, "/a /b")
	f.Add(KeyRedirectFrom, "http://a.local/")
	f.Add(KeyUpstreamVhost, `x"; return 200 "`)
	f.Add(KeyBusyBuffersSize, "64k")
	keys := []string{}
	for _, a := range New().Describe().Annotations {
		keys = append(keys, a.Key)
	}
	f.Fuzz(func(t *testing.T, key, value string) {
		in := map[string]string{key: value}
		for i, k := range keys {
			if i%3 == len(value)%3 {
				in[k] = value
			}
		}
		got, _ := Parse(in)
		fs := bus.Features{Proxy: got}
		if err := fs.Validate(); err != nil {
			t.Fatalf("Parse(%q) = %+v, refused by Validate: %v", in, got, err)
		}
		if got == nil {
			return
		}
		for _, s := range []string{got.BodySize, got.BufferSize, got.BusyBuffersSize, got.ClientBodyBufferSize, got.MaxTempFileSize,
			got.NextUpstream, got.CookieDomain, got.CookiePath, got.RedirectFrom, got.RedirectTo, got.ConnectionHeader, got.UpstreamVhost} {
			if strings.ContainsAny(s, "\"'\\$;{}\n\r\x00") {
				t.Fatalf("accepted %q", s)
			}
		}
	})
}
