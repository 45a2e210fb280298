package renderer

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestRegexLocationsOrder(t *testing.T) {
	regex := &bus.Features{Rewrite: &bus.Rewrite{UseRegex: true}}
	auth := &bus.Features{Auth: &bus.Auth{External: &bus.ExternalAuth{URL: "http://auth.example.com/"}}}
	authRegex := &bus.Features{Auth: auth.Auth, Rewrite: regex.Rewrite}
	deny := &bus.Features{Deny: &bus.Deny{Status: 503, Reason: "auth plugin down"}}
	for _, tc := range []struct {
		name string
		locs []bus.Location
		want []string
	}{{
		// ingress-nginx: every path of the Ingress that asks for a regex is
		// one (its Exact and Prefix paths too), longest first.
		name: "one regex Ingress",
		locs: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "b", Ingress: "ns/a", Features: regex},
			{Path: "/api", PathType: bus.PathExact, Backend: "b", Ingress: "ns/a", Features: regex},
			{Path: "/api", PathType: bus.PathPrefix, Backend: "b", Ingress: "ns/a", Features: regex},
			{Path: "/bpi", PathType: bus.PathPrefix, Backend: "b", Ingress: "ns/a"},
			{Path: "/a(.*)", PathType: "ImplementationSpecific", Backend: "b", Ingress: "ns/a",
				Features: &bus.Features{Rewrite: &bus.Rewrite{Target: "/$1"}}},
		},
		want: []string{"~* ^/a(.*) ^/a(.*)", "~* ^/bpi", "~* ^/api", "~* ^/"},
	}, {
		// Issue 10, finding 3: a regex Ingress leaves the paths of the
		// others Exact and Prefix, and a protected Prefix is "^~".
		name: "other Ingresses keep their paths",
		locs: []bus.Location{
			{Path: "/", PathType: bus.PathPrefix, Backend: "t", Ingress: "tenant/app"},
			{Path: "/admin", PathType: bus.PathPrefix, Backend: "t", Ingress: "tenant/admin", Features: auth},
			{Path: "/down", PathType: bus.PathPrefix, Backend: "t", Ingress: "tenant/down", Features: deny},
			{Path: "/x", PathType: bus.PathExact, Backend: "t", Ingress: "tenant/app"},
			{Path: "/admin.*", PathType: "ImplementationSpecific", Backend: "o", Ingress: "other/grab", Features: regex},
		},
		want: []string{"/", "^~ /admin/", "= /admin", "^~ /down/", "= /down", "= /x", "~* ^/admin.*"},
	}, {
		// A protected regex location comes before every unprotected one.
		name: "protected regexes first",
		locs: []bus.Location{
			{Path: "/admin.*", PathType: "ImplementationSpecific", Backend: "o", Ingress: "other/grab", Features: regex},
			{Path: "/admin", PathType: "ImplementationSpecific", Backend: "t", Ingress: "tenant/admin", Features: authRegex},
			{Path: "/a", PathType: "ImplementationSpecific", Backend: "t", Ingress: "tenant/admin", Features: authRegex},
		},
		want: []string{"~* ^/admin", "~* ^/a", "~* ^/admin.*"},
	}, {
		// A rewrite-target equal to the path asks for nothing, as in
		// ingress-nginx: the server keeps prefix locations.
		name: "target equal to the path",
		locs: []bus.Location{{Path: "/x", PathType: bus.PathPrefix, Backend: "b", Ingress: "ns/x",
			Features: &bus.Features{Rewrite: &bus.Rewrite{Target: "/x"}}}},
		want: []string{"/x/", "= /x"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			views, err := nginxLocations(tc.locs)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range views {
				got = append(got, strings.TrimSpace(v.Modifier+v.Path+" "+v.RewriteRegex))
			}
			if strings.Join(got, "|") != strings.Join(tc.want, "|") {
				t.Fatalf("locations\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestFromToWWWFollowsTheOtherHost(t *testing.T) {
	r := newFileRenderer(DefaultConfig())
	bare := &bus.Server{Hostname: "shop.example.com", Locations: []bus.Location{{Path: "/", PathType: bus.PathPrefix, Backend: "b",
		Features: &bus.Features{Redirect: &bus.Redirect{FromToWWW: true}}}}}
	r.SetServer("server.shop", bare)
	if _, errs := r.Flush(); len(errs) > 0 {
		t.Fatal(errs)
	}
	file := ServerFile("shop.example.com")
	redirect := `server_name "www.shop.example.com";`
	if !strings.Contains(r.Artifacts().Files[file], redirect) || !strings.Contains(r.Artifacts().Files[file], `redirect_to_host("shop.example.com")`) {
		t.Fatalf("no www redirect server:\n%s", r.Artifacts().Files[file])
	}
	// A real www host appears: the redirect server goes, in the same flush.
	r.SetServer("server.www", &bus.Server{Hostname: "www.shop.example.com", Locations: []bus.Location{{Path: "/", PathType: bus.PathPrefix, Backend: "b"}}})
	out, errs := r.Flush()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if _, ok := out.Values[fileKey(file)]; !ok || strings.Contains(r.Artifacts().Files[file], redirect) {
		t.Fatalf("the redirect server stayed:\n%s", r.Artifacts().Files[file])
	}
	// And it comes back when the www host goes.
	r.SetServer("server.www", nil)
	if _, errs := r.Flush(); len(errs) > 0 {
		t.Fatal(errs)
	}
	if !strings.Contains(r.Artifacts().Files[file], redirect) {
		t.Fatal("the redirect server did not come back")
	}
	// A www host redirects from the bare one; wildcards get none.
	if got := wwwRedirect(&bus.Server{Hostname: "www.blog.example.com", Locations: bare.Locations}, nil); got != "blog.example.com" {
		t.Fatalf("www host: %q", got)
	}
	if got := wwwRedirect(&bus.Server{Hostname: "*.example.com", Locations: bare.Locations}, nil); got != "" {
		t.Fatalf("wildcard host: %q", got)
	}
}

func TestWritersRefuse(t *testing.T) {
	for _, s := range []string{`/a"`, "/a\\", "/$host", "/a b", "/a;", "/{x}", "^/a$b"} {
		if _, err := locationArg(s); err == nil {
			t.Errorf("locationArg accepted %q", s)
		}
	}
	for _, s := range []string{"/$host", "/${1}", "/$0", `/"`, "/a b", "/x$"} {
		if _, err := rewriteTarget(s); err == nil {
			t.Errorf("rewriteTarget accepted %q", s)
		}
	}
	if got, err := rewriteRegex("^/a(/|$)(.*)"); err != nil || got != `"(?i)^/a(/|$)(.*)"` {
		t.Errorf("rewriteRegex = %s, %v", got, err)
	}
	if _, err := rewriteRegex("/a"); err == nil {
		t.Error("rewriteRegex accepted an unanchored regex")
	}
	for _, tt := range []struct {
		host, want string
	}{
		{"shop.example.com", `false, true, false, "shop.example.com"`},
		// $host varies within these servers: Lua reads it.
		{"*.example.com", "false, true, false"},
		{bus.DefaultServerName, "false, true, false"},
		{"Shop.example.com", "false, true, false"},
	} {
		got, err := luaLocation(bus.Settings{SSLRedirect: true}, &bus.Features{Redirect: &bus.Redirect{SSLRedirect: new(bool), ForceSSLRedirect: ptrTrue()}}, "/", tt.host)
		if err != nil || got != tt.want {
			t.Errorf("luaLocation(%q) = %s, %v; want %s", tt.host, got, err, tt.want)
		}
	}
	if got, err := luaLocation(bus.Settings{}, nil, "/", `a"b.example.com`); err == nil {
		t.Errorf("luaLocation accepted a quote in the host: %s", got)
	}
}

func ptrTrue() *bool { t := true; return &t }
