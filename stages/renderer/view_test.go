package renderer

import (
	"reflect"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestLocationView checks what a location resolves to: its kind, the
// values it writes already quoted, its burst and Lua arguments.
func TestLocationView(t *testing.T) {
	ctx := locationContext{
		cfg:      Config{Resolvers: []string{"127.0.0.53"}},
		settings: bus.Settings{SSLRedirect: true},
		host:     "app.example.com",
		backends: backendContext{external: map[string]string{"ext-80": "api.example.net:443", "bad-80": "x y:1"}},
		src: sources{ingress: func(name string) string { return "# source ingress " + name },
			testRefuse: map[string]bool{"ns/refused": true}},
	}
	for _, tc := range []struct {
		name string
		loc  location
		want locationView
	}{{
		name: "proxy",
		loc:  location{Modifier: "= ", Path: "/a", Backend: "ns-web-80", Ingress: "ns/a"},
		want: locationView{Source: "# source ingress ns/a", Arg: `= "/a"`, Kind: kindProxy,
			Upstream: `"ns-web-80"`, IngressArgs: `true, false, false, "app.example.com"`, BalancerArg: `"ns-web-80"`},
	}, {
		name: "no backend is not found, logged as the default backend",
		loc:  location{Path: "/", Ingress: "ns/a", Features: &bus.Features{Redirect: &bus.Redirect{ForceSSLRedirect: ptrTrue()}}},
		want: locationView{Source: "# source ingress ns/a", Arg: `"/"`, Kind: kindNotFound,
			Upstream: `"` + bus.DefaultBackendName + `"`, IngressArgs: `true, true, false, "app.example.com"`},
	}, {
		name: "deny wins over everything, auth left out",
		loc: location{Path: "/d/", Backend: "ns-web-80", Ingress: "ns/refused", Features: &bus.Features{
			Deny: &bus.Deny{Status: 503}, Redirect: &bus.Redirect{URL: "https://x.example.com/", Code: 301},
			Auth: &bus.Auth{Basic: &bus.BasicAuth{Realm: "r"}}}},
		want: locationView{Source: "# source ingress ns/refused", Arg: `"/d/"`, TestRefused: TestRefusedDirective,
			Kind: kindDeny, Upstream: `"ns-web-80"`, Return: "503"},
	}, {
		name: "redirect",
		loc: location{Path: "/r/", Backend: "ns-web-80", Ingress: "ns/r", Features: &bus.Features{
			Redirect: &bus.Redirect{URL: "https://x.example.com/a?b=c", Code: 308}}},
		want: locationView{Source: "# source ingress ns/r", Arg: `"/r/"`, Kind: kindRedirect,
			Upstream: `"ns-web-80"`, Return: `308 "https://x.example.com/a?b=c"`},
	}, {
		name: "external with rewrite",
		loc: location{Modifier: "~* ", Path: "^/x(.*)", Backend: "ext-80", Ingress: "ns/x", RewriteRegex: "^/x(.*)",
			Features: &bus.Features{Rewrite: &bus.Rewrite{Target: "/$1", AppRoot: "/app", XForwardedPrefix: "/x"}}},
		want: locationView{Source: "# source ingress ns/x", Arg: `~* "^/x(.*)"`, Kind: kindExternal,
			Upstream: `"ext-80"`, External: `"api.example.net:443"`, IngressArgs: `true, false, false, "app.example.com"`,
			Rewrite: rewriteView{AppRoot: `"/app"`, XForwardedPrefix: `"/x"`, Regex: `"(?i)^/x(.*)"`, Target: `"/$1"`}},
	}, {
		name: "an external target we will not write is proxied (and answered 503 by Lua)",
		loc:  location{Path: "/b", Backend: "bad-80", Ingress: "ns/b"},
		want: locationView{Source: "# source ingress ns/b", Arg: `"/b"`, Kind: kindProxy,
			Upstream: `"bad-80"`, IngressArgs: `true, false, false, "app.example.com"`, BalancerArg: `"bad-80"`},
	}, {
		name: "rate limit, burst and response headers",
		loc: location{Path: "/l", Backend: "ns-web-80", Ingress: "ns/l", RateLimitID: "rl_x",
			Features: &bus.Features{RateLimit: &bus.RateLimit{RPS: 5, RPM: 60, Connections: 3, BurstMultiplier: 2, RateKB: 10},
				ResponseHeaders: []bus.Header{{Name: "X-A", Value: "1 2"}}}},
		want: locationView{Source: "# source ingress ns/l", Arg: `"/l"`, Kind: kindProxy,
			RateLimit: &rateLimitView{ConnZone: "rl_x_conn", Connections: 3, RateKB: 10,
				Requests: []limitReqView{{Zone: "rl_x_rps", Burst: 10}, {Zone: "rl_x_rpm", Burst: 120}}},
			ResponseHeaders: []headerView{{Name: `"X-A"`, Value: `"1 2"`}},
			Upstream:        `"ns-web-80"`, IngressArgs: `true, false, false, "app.example.com"`, BalancerArg: `"ns-web-80"`},
	}, {
		name: "limit-rate alone declares no zone",
		loc: location{Path: "/l", Backend: "ns-web-80", Ingress: "ns/l",
			Features: &bus.Features{RateLimit: &bus.RateLimit{RateKB: 10, RateAfterKB: 1}}},
		want: locationView{Source: "# source ingress ns/l", Arg: `"/l"`, Kind: kindProxy,
			RateLimit: &rateLimitView{RateKB: 10, RateAfterKB: 1},
			Upstream:  `"ns-web-80"`, IngressArgs: `true, false, false, "app.example.com"`, BalancerArg: `"ns-web-80"`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newLocationView(0, tc.loc, ctx)
			if err != nil {
				t.Fatal(err)
			}
			// The metric labels have their own test (metrics_test.go),
			// also where balancer.rewrite gets them, after five arguments
			// these locations leave nil.
			got.Labels = labelsView{}
			got.BalancerArg, _, _ = strings.Cut(got.BalancerArg, ", nil, nil, nil, nil, nil, ")
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestLocationViewRefuses checks that every user-derived value a location
// writes still passes its whole-string check: a value that slipped past
// the validator fails the location instead of reaching nginx.conf.
func TestLocationViewRefuses(t *testing.T) {
	ctx := locationContext{settings: bus.Settings{}, host: "a.example.com", src: sources{ingress: func(string) string { return "" }}}
	for _, tc := range []struct {
		name string
		loc  location
	}{
		{"path", location{Path: `/a";`, Backend: "b"}},
		{"backend", location{Path: "/", Backend: `b"`}},
		{"redirect URL", location{Path: "/", Features: &bus.Features{Redirect: &bus.Redirect{URL: "https://x/$host", Code: 301}}}},
		{"response header", location{Path: "/", Features: &bus.Features{ResponseHeaders: []bus.Header{{Name: "X", Value: `a"b`}}}}},
		{"app root", location{Path: "/", Features: &bus.Features{Rewrite: &bus.Rewrite{AppRoot: "/$x"}}}},
		{"rewrite target", location{Path: "/", RewriteRegex: "^/", Features: &bus.Features{Rewrite: &bus.Rewrite{Target: "/$host"}}}},
		{"auth realm", location{Path: "/", Features: &bus.Features{Auth: &bus.Auth{Basic: &bus.BasicAuth{Realm: `a"`}}}}},
		{"auth URL", location{Path: "/", Features: &bus.Features{Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://a/$x"}}}}},
		{"signin URL", location{Path: "/", Features: &bus.Features{Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://a/", SigninURL: "http://a/'"}}}}},
		{"Ingress", location{Path: "/", Ingress: `ns/"a`}},
		{"Service", location{Path: "/", Ingress: "ns/a", labels: metricLabels{path: "/", service: `a"b`}}},
		{"Service port", location{Path: "/", Ingress: "ns/a", labels: metricLabels{path: "/", service: "a", servicePort: "$x"}}},
		{"metrics path", location{Path: "/", Ingress: "ns/a", labels: metricLabels{path: "/a\"\n"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if v, err := newLocationView(0, tc.loc, ctx); err == nil {
				t.Errorf("accepted: %+v", v)
			}
		})
	}
}

// TestServerView checks the server-level decisions: listens, custom
// error pages only with a default backend, the www redirect server.
func TestServerView(t *testing.T) {
	cfg := Config{}
	www := &bus.Features{Redirect: &bus.Redirect{FromToWWW: true}}
	for _, tc := range []struct {
		name       string
		settings   bus.Settings
		server     *bus.Server
		hasDefault bool
		check      func(t *testing.T, v serverView)
	}{{
		name:     "catch-all is the default server",
		settings: bus.Settings{UseHTTP2: true, CustomHTTPErrors: []int{404}},
		server:   &bus.Server{Hostname: bus.DefaultServerName},
		check: func(t *testing.T, v serverView) {
			want := []string{"@HTTP_ADDR@ default_server", "@HTTPS_ADDR@ ssl http2 default_server"}
			if v.ServerName != "_" || !reflect.DeepEqual(v.Listens, want) || v.Errors != nil || v.WWW != nil {
				t.Errorf("%+v", v)
			}
		},
	}, {
		name:       "custom errors need the default backend",
		settings:   bus.Settings{CustomHTTPErrors: []int{404, 503}},
		server:     &bus.Server{Hostname: "a.example.com"},
		hasDefault: true,
		check: func(t *testing.T, v serverView) {
			ce := v.Errors
			wantPages := []errorPageView{{404, "@custom_upstream-default-backend_404"}, {503, "@custom_upstream-default-backend_503"}}
			if ce == nil || !reflect.DeepEqual(ce.Pages, wantPages) || len(ce.Locations) != 2 ||
				ce.Locations[0].Upstream != `"`+bus.DefaultBackendName+`"` || ce.Locations[1].Code != 503 ||
				ce.Locations[0].BalancerArg != `"`+bus.DefaultBackendName+`"` || !strings.HasPrefix(ce.Source, "# source") {
				t.Errorf("%+v", ce)
			}
		},
	}, {
		name: "www redirect",
		server: &bus.Server{Hostname: "www.a.example.com", Locations: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "b", Ingress: "ns/w", Features: www}}},
		check: func(t *testing.T, v serverView) {
			w := v.WWW
			if w == nil || w.Host != "a.example.com" || w.Target != "www.a.example.com" || w.ServerName != `"a.example.com"` ||
				w.TargetLua != `"www.a.example.com"` || w.Source != "# source ingress ns/w" || v.HeaderSource != "# source ingress ns/w" ||
				!reflect.DeepEqual(w.Listens, []string{"@HTTP_ADDR@", "@HTTPS_ADDR@ ssl"}) {
				t.Errorf("%+v", w)
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := sources{ingress: func(name string) string { return "# source ingress " + name }}
			v, err := newServerView(cfg, tc.settings, tc.server, backendContext{hasDefault: tc.hasDefault}, src)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, v)
		})
	}
}

// TestMainView checks nginx.conf's decisions: the flag over the ConfigMap,
// which status codes are written, the quoted and Lua values.
func TestMainView(t *testing.T) {
	base := bus.DefaultSettings()
	for _, tc := range []struct {
		name   string
		cfg    func(*Config)
		set    func(*bus.Settings)
		check  func(v mainView) bool
		refuse bool
	}{
		{name: "defaults", check: func(v mainView) bool {
			return v.WorkerProcesses == base.WorkerProcesses && v.Src.WorkerProcesses != "" && v.HTTPSPort == `"@HTTPS_PORT@"` &&
				v.AccessLog == "logs/access.log upstreaminfo" && v.ServerTokens == "off" && v.User == "" &&
				v.LoadModules[1] == `"/usr/lib/nginx/modules/ngx_http_lua_module.so"`
		}},
		{name: "the flag's worker processes, unattributed", cfg: func(c *Config) { c.WorkerProcesses = "3" },
			check: func(v mainView) bool { return v.WorkerProcesses == "3" && v.Src.WorkerProcesses == "" }},
		{name: "user and empty group quoted", cfg: func(c *Config) { c.User = "www" },
			check: func(v mainView) bool { return v.User == `"www" ""` }},
		{name: "only error statuses are written", set: func(s *bus.Settings) { s.LimitReqStatusCode, s.LimitConnStatusCode = 200, 429 },
			check: func(v mainView) bool { return v.LimitReqStatus == 0 && v.LimitConnStatus == 429 }},
		{name: "keepalive off", set: func(s *bus.Settings) { s.UpstreamKeepaliveConnections = 0 },
			check: func(v mainView) bool { return !v.Keepalive }},
		{name: "ciphers are quoted", set: func(s *bus.Settings) { s.SSLCiphers = `a"b` }, refuse: true},
		{name: "log format is checked", set: func(s *bus.Settings) { s.LogFormatUpstream = "a'b" }, refuse: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, s := DefaultConfig(), base
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			if tc.set != nil {
				tc.set(&s)
			}
			v, err := newMainView(cfg, s, sources{settings: &s}, nil)
			if tc.refuse {
				if err == nil {
					t.Errorf("accepted: %+v", v)
				}
				return
			}
			if err != nil || !tc.check(v) {
				t.Errorf("%+v, %v", v, err)
			}
		})
	}
}
