package renderer

import (
	"reflect"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestDynamicServer: which servers dynamicServer lets router.lua serve,
// and why the others keep their server blocks.
func TestDynamicServer(t *testing.T) {
	yes := true
	plain := func(host string, f *bus.Features) *bus.Server {
		return &bus.Server{Hostname: host, Locations: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "ns-web-80", Ingress: "ns/web", Service: "web", ServicePort: "80", Features: f}}}
	}
	for _, tc := range []struct {
		name     string
		server   *bus.Server
		settings func(*bus.Settings)
		off      bool
		want     string // "" when routed in Lua, else the reason's start
		wantBody int64  // the route's body_limit
		// wantRewrite is the route's rewrite_regex.
		wantRewrite string
		// wantCORS is the route's cors.
		wantCORS *LuaRouteCORS
		// wantAccess is the route's access lines.
		wantAccess []string
	}{
		{name: "plain", server: plain("a.example.com", nil)},
		{name: "force-ssl-redirect", server: plain("a.example.com",
			&bus.Features{Redirect: &bus.Redirect{ForceSSLRedirect: &yes}})},
		{name: "app-root and x-forwarded-prefix", server: plain("a.example.com",
			&bus.Features{Rewrite: &bus.Rewrite{AppRoot: "/app", XForwardedPrefix: "/p"}})},
		{name: "lua routing off", server: plain("a.example.com", nil), off: true, want: "lua routing is off"},
		{name: "the catch-all", server: plain(bus.DefaultServerName, nil), want: "not a host name"},
		{name: "wildcard", server: plain("*.example.com", nil)},
		{name: "server-alias", server: func() *bus.Server {
			s := plain("a.example.com", nil)
			s.Aliases = []string{"b.example.com"}
			return s
		}(), want: "server-alias"},
		{name: "proxy timeouts, upstream-vhost, connection-proxy-header", server: plain("a.example.com",
			&bus.Features{Proxy: &bus.Proxy{ConnectTimeout: 2, SendTimeout: 3, ReadTimeout: 4,
				UpstreamVhost: "b.internal:8080", ConnectionHeader: "keep-alive"}})},
		{name: "timeouts with proxy-buffering", server: plain("a.example.com",
			&bus.Features{Proxy: &bus.Proxy{ReadTimeout: 4, Buffering: "on"}}), want: `location "/": proxy annotations`},
		{name: "proxy-body-size above the shared 1m", server: plain("a.example.com", &bus.Features{Proxy: &bus.Proxy{BodySize: "8m"}}),
			want: "location"},
		{name: "proxy-body-size 0 (no limit) above the shared 1m", server: plain("a.example.com",
			&bus.Features{Proxy: &bus.Proxy{BodySize: "0"}}), want: "location"},
		{name: "proxy-body-size below the shared 1m", server: plain("a.example.com",
			&bus.Features{Proxy: &bus.Proxy{BodySize: "1k"}}), wantBody: 1024},
		{name: "proxy-body-size equal to the shared one", server: plain("a.example.com",
			&bus.Features{Proxy: &bus.Proxy{BodySize: "1024k"}})},
		{name: "proxy-body-size below a shared 0 (no limit)", server: plain("a.example.com",
			&bus.Features{Proxy: &bus.Proxy{BodySize: "2m"}}), settings: func(s *bus.Settings) { s.ProxyBodySize = "0" },
			wantBody: 2 << 20},
		{name: "proxy-body-size below the shared one, request buffering off", server: plain("a.example.com",
			&bus.Features{Proxy: &bus.Proxy{BodySize: "1k"}}), settings: func(s *bus.Settings) { s.ProxyRequestBuffering = "off" },
			want: "location"},
		{name: "permanent-redirect", server: plain("a.example.com",
			&bus.Features{Redirect: &bus.Redirect{URL: "https://b.example.com/", Code: 301}})},
		{name: "temporal-redirect 308", server: plain("a.example.com",
			&bus.Features{Redirect: &bus.Redirect{URL: "https://b.example.com/", Code: 308}})},
		{name: "permanent-redirect-code 300 (the URL is the body)", server: plain("a.example.com",
			&bus.Features{Redirect: &bus.Redirect{URL: "https://b.example.com/", Code: 300}}), want: "location"},
		{name: "rewrite-target", server: plain("a.example.com", &bus.Features{Rewrite: &bus.Rewrite{Target: "/x/$1"}}),
			wantRewrite: "(?i)^/"},
		{name: "rewrite-target with a query", server: plain("a.example.com", &bus.Features{Rewrite: &bus.Rewrite{Target: "/x?a=$1"}}),
			want: "location"},
		{name: "rewrite-target not a path", server: plain("a.example.com", &bus.Features{Rewrite: &bus.Rewrite{Target: "x/$1"}}),
			want: "location"},
		{name: "enable-cors", server: plain("a.example.com", &bus.Features{CORS: &bus.CORS{
			Origins: []string{"https://a.example.com", "https://*.example.org:8443"}, Methods: "GET, PUT", Headers: "X-A",
			ExposeHeaders: "X-B", Credentials: true, MaxAge: 60}}),
			wantCORS: &LuaRouteCORS{Origins: "https://a.example.com https://*.example.org:8443", Methods: "GET, PUT",
				Headers: "X-A", ExposeHeaders: "X-B", Credentials: true, MaxAge: 60}},
		{name: "allowlist and denylist, IPv4 and IPv6", server: plain("a.example.com", &bus.Features{Access: &bus.Access{
			Deny: []string{"10.1.2.3/32", "2001:db8:0:1::/64"}, Allow: []string{"10.0.0.0/8", "2001:db8::/32"}}}),
			wantAccess: []string{"deny 10.1.2.3/32", "deny 2001:db8:0:1::/64", "allow 10.0.0.0/8", "allow 2001:db8::/32", "deny all"}},
		{name: "the ConfigMap's block-cidrs, denylist and whitelist", server: plain("a.example.com", nil),
			settings: func(s *bus.Settings) {
				s.BlockCIDRs, s.DenylistSourceRange = []string{"192.0.2.0/24"}, []string{"10.1.2.3/32"}
				s.WhitelistSourceRange = []string{"10.0.0.0/8", "::ffff:10.0.0.0/104"}
			},
			wantAccess: []string{"deny 192.0.2.0/24", "deny 10.1.2.3/32", "allow 10.0.0.0/8", "allow ::ffff:10.0.0.0/104", "deny all"}},
		{name: "an own allowlist replaces the whitelist, block-cidrs stays", server: plain("a.example.com",
			&bus.Features{Access: &bus.Access{Allow: []string{"2001:db8::1/128"}}}),
			settings: func(s *bus.Settings) {
				s.BlockCIDRs, s.WhitelistSourceRange = []string{"0.0.0.0/0"}, []string{"10.0.0.0/8"}
			},
			wantAccess: []string{"deny 0.0.0.0/0", "allow 2001:db8::1/128", "deny all"}},
		{name: "an unreadable whitelist fails closed", server: plain("a.example.com", nil),
			settings:   func(s *bus.Settings) { s.MarkUnreadable(bus.KeyWhitelistSourceRange) },
			wantAccess: []string{"deny all"}},
		{name: "an unreadable block-cidrs fails closed over an own allowlist", server: plain("a.example.com",
			&bus.Features{Access: &bus.Access{Allow: []string{"10.0.0.0/8"}}}),
			settings:   func(s *bus.Settings) { s.MarkUnreadable(bus.KeyBlockCIDRs) },
			wantAccess: []string{"deny all"}},
		{name: "satisfy any without auth", server: plain("a.example.com",
			&bus.Features{Access: &bus.Access{Allow: []string{"10.0.0.0/8"}, SatisfyAny: true}}),
			wantAccess: []string{"allow 10.0.0.0/8", "deny all", "satisfy any"}},
		{name: "satisfy any with external auth", server: plain("a.example.com",
			&bus.Features{Access: &bus.Access{Allow: []string{"10.0.0.0/8"}, SatisfyAny: true},
				Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://auth.example.com/check"}}}),
			want: `location ^~ "/": access lines that need directives`},
		{name: "255.255.255.255, which NGINX refuses", server: plain("a.example.com",
			&bus.Features{Access: &bus.Access{Deny: []string{"255.255.255.255/32"}}}),
			want: `location ^~ "/": access lines that need directives`},
		{name: "source ranges with external auth", server: plain("a.example.com",
			&bus.Features{Access: &bus.Access{Allow: []string{"10.0.0.0/8"}},
				Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://auth.example.com/check"}}}),
			want: `location ^~ "/": needs directives`},
		{name: "ssl-reject-handshake", server: plain("a.example.com", nil),
			settings: func(s *bus.Settings) { s.SSLRejectHandshake = true }, want: "ssl-reject-handshake"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.LuaRouting = !tc.off
			settings := bus.DefaultSettings()
			if tc.settings != nil {
				tc.settings(&settings)
			}
			view, err := newServerView(cfg, settings, tc.server, backendContext{hostExists: func(string) bool { return false }}, sources{})
			if err != nil {
				t.Fatal(err)
			}
			ok, why := dynamicServer(cfg, settings, view, tc.server)
			if ok != (tc.want == "") || !strings.HasPrefix(why, tc.want) {
				t.Errorf("dynamic %v (%q), want %q", ok, why, tc.want)
			}
			if !ok {
				return
			}
			route := newLuaRoute(settings, tc.server, view)
			if len(route.Locations) == 0 || route.Host != tc.server.Hostname {
				t.Fatalf("route %+v", route)
			}
			if got := route.Locations[0].BodyLimit; got != tc.wantBody {
				t.Errorf("body_limit %d, want %d", got, tc.wantBody)
			}
			if got := route.Locations[0].RewriteRegex; got != tc.wantRewrite {
				t.Errorf("rewrite_regex %q, want %q", got, tc.wantRewrite)
			}
			if got := route.Locations[0].Access; !reflect.DeepEqual(got, tc.wantAccess) {
				t.Errorf("access %q, want %q", got, tc.wantAccess)
			}
			if got := route.Locations[0].CORS; !reflect.DeepEqual(got, tc.wantCORS) {
				t.Errorf("cors %+v, want %+v", got, tc.wantCORS)
			}
		})
	}
}
