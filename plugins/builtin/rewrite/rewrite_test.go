package rewrite

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      map[string]string
		want    *bus.Rewrite
		errKeys []string
	}{
		{name: "nothing", in: map[string]string{}},
		{name: "capture target", in: map[string]string{KeyRewriteTarget: "/$2"}, want: &bus.Rewrite{Target: "/$2"}},
		{name: "target with query and captures", in: map[string]string{KeyRewriteTarget: "/api/$1?v=$2&x=1"}, want: &bus.Rewrite{Target: "/api/$1?v=$2&x=1"}},
		{name: "bare capture", in: map[string]string{KeyRewriteTarget: "$1"}, want: &bus.Rewrite{Target: "$1"}},
		{name: "variable refused", in: map[string]string{KeyRewriteTarget: "/$host"}, errKeys: []string{KeyRewriteTarget}},
		{name: "braced variable refused", in: map[string]string{KeyRewriteTarget: "/${1}"}, errKeys: []string{KeyRewriteTarget}},
		{name: "$0 refused", in: map[string]string{KeyRewriteTarget: "/$0"}, errKeys: []string{KeyRewriteTarget}},
		{name: "trailing $ refused", in: map[string]string{KeyRewriteTarget: "/x$"}, errKeys: []string{KeyRewriteTarget}},
		{name: "quote refused", in: map[string]string{KeyRewriteTarget: `/x" break; return 200 "`}, errKeys: []string{KeyRewriteTarget}},
		{name: "empty refused", in: map[string]string{KeyRewriteTarget: ""}, errKeys: []string{KeyRewriteTarget}},
		{name: "use-regex", in: map[string]string{KeyUseRegex: "true"}, want: &bus.Rewrite{UseRegex: true}},
		{name: "use-regex false is nothing", in: map[string]string{KeyUseRegex: "false"}},
		{name: "use-regex bad", in: map[string]string{KeyUseRegex: "on"}, errKeys: []string{KeyUseRegex}},
		{name: "app-root", in: map[string]string{KeyAppRoot: "/app1"}, want: &bus.Rewrite{AppRoot: "/app1"}},
		{name: "app-root / loops", in: map[string]string{KeyAppRoot: "/"}, errKeys: []string{KeyAppRoot}},
		{name: "app-root URL refused", in: map[string]string{KeyAppRoot: "https://evil.example.com"}, errKeys: []string{KeyAppRoot}},
		{name: "app-root $ refused", in: map[string]string{KeyAppRoot: "/$request_uri"}, errKeys: []string{KeyAppRoot}},
		{name: "x-forwarded-prefix", in: map[string]string{KeyXForwardedPrefix: "/svc"}, want: &bus.Rewrite{XForwardedPrefix: "/svc"}},
		{name: "x-forwarded-prefix with space refused", in: map[string]string{KeyXForwardedPrefix: "/a b"}, errKeys: []string{KeyXForwardedPrefix}},
		{name: "all", in: map[string]string{KeyRewriteTarget: "/$1", KeyUseRegex: "1", KeyAppRoot: "/x", KeyXForwardedPrefix: "/p"},
			want: &bus.Rewrite{Target: "/$1", UseRegex: true, AppRoot: "/x", XForwardedPrefix: "/p"}},
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
				keys = append(keys, e.Key)
			}
			if !reflect.DeepEqual(keys, tt.errKeys) {
				t.Fatalf("errors %v, want %v", keys, tt.errKeys)
			}
			f := bus.Features{Rewrite: got}
			if err := f.Validate(); err != nil {
				t.Fatalf("features refused: %v", err)
			}
		})
	}
}

func TestDescribePatternsCompile(t *testing.T) {
	for _, a := range New().Describe().Annotations {
		if _, err := regexp.Compile(`^(?:` + a.Pattern + `)$`); err != nil {
			t.Errorf("%s: %v", a.Key, err)
		}
	}
}

func TestCheckRegexPath(t *testing.T) {
	for _, ok := range []string{"/", "/something(/|$)(.*)", "/v[0-9]{1,2}/api", "/a{2,}$", "/(foo|bar)$", "/x.*"} {
		if err := bus.CheckRegexPath(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"/$host", "/a{${x}}", "/(", "/a{1001}", "/a\"b", "/a b", "/a;b", "/a\\d", "/{x}", "/a$b", "relative", "/(?=x)"} {
		if err := bus.CheckRegexPath(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzParse: Parse never panics, and what it returns passes Validate and
// holds "$" only as a capture reference $1-$9.
func FuzzParse(f *testing.F) {
	f.Add("/$2", "true", "/app", "/p")
	f.Add("/${host}", "x", "/", "/a b")
	f.Add("/$0$9$", "1", "/$x", `/"`)
	dollarName := regexp.MustCompile(`\$([^1-9]|$)`)
	f.Fuzz(func(t *testing.T, target, useRegex, appRoot, prefix string) {
		got, _ := Parse(map[string]string{KeyRewriteTarget: target, KeyUseRegex: useRegex, KeyAppRoot: appRoot, KeyXForwardedPrefix: prefix})
		fs := bus.Features{Rewrite: got}
		if err := fs.Validate(); err != nil {
			t.Fatalf("Parse returned features Validate refuses: %v", err)
		}
		if got == nil {
			return
		}
		if dollarName.MatchString(got.Target) || strings.ContainsAny(got.Target, "\"\\;{} \r\n\x00") {
			t.Fatalf("target %q accepted", got.Target)
		}
		if strings.ContainsAny(got.AppRoot+got.XForwardedPrefix, "$\"\\;{} \r\n\x00") {
			t.Fatalf("app-root %q / prefix %q accepted", got.AppRoot, got.XForwardedPrefix)
		}
	})
}

// FuzzCheckRegexPath: an accepted regex path never names an NGINX
// variable, holds nothing that ends a quoted string, and compiles.
func FuzzCheckRegexPath(f *testing.F) {
	for _, s := range []string{"/something(/|$)(.*)", "/a{1,3}", "/$host", "/{", "/(", "/a$)"} {
		f.Add(s)
	}
	dollarName := regexp.MustCompile(`\$[^)|]`)
	f.Fuzz(func(t *testing.T, path string) {
		if bus.CheckRegexPath(path) != nil {
			return
		}
		if dollarName.MatchString(path) || strings.ContainsAny(path, "\"\\;' \t\r\n\x00") {
			t.Fatalf("%q accepted", path)
		}
		if _, err := regexp.Compile("(?i)^" + path); err != nil {
			t.Fatalf("%q accepted but does not compile: %v", path, err)
		}
	})
}
