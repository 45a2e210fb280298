package redirect

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/plugintest"
)

func ptr[T any](v T) *T { return &v }

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		in       map[string]string
		want     *bus.Redirect
		errKeys  []string // rejecting errors
		warnKeys []string // warnings
	}{
		{name: "nothing", in: map[string]string{}, want: nil},
		{name: "ssl-redirect false is kept", in: map[string]string{KeySSLRedirect: "false"},
			want: &bus.Redirect{SSLRedirect: ptr(false)}},
		{name: "ssl-redirect true is kept too", in: map[string]string{KeySSLRedirect: "True"},
			want: &bus.Redirect{SSLRedirect: ptr(true)}},
		{name: "force and preserve", in: map[string]string{KeyForceSSLRedirect: "true", KeyPreserveTrailingSlash: "1"},
			want: &bus.Redirect{ForceSSLRedirect: ptr(true), PreserveTrailingSlash: ptr(true)}},
		{name: "false force overrides the ConfigMap", in: map[string]string{KeyForceSSLRedirect: "false"}, want: &bus.Redirect{ForceSSLRedirect: ptr(false)}},
		{name: "bad bool", in: map[string]string{KeyFromToWWWRedirect: "yes"}, want: nil, errKeys: []string{KeyFromToWWWRedirect}},
		{name: "www", in: map[string]string{KeyFromToWWWRedirect: "true"}, want: &bus.Redirect{FromToWWW: true}},
		{name: "permanent default code", in: map[string]string{KeyPermanentRedirect: "https://x.example.com/a?b=c"},
			want: &bus.Redirect{URL: "https://x.example.com/a?b=c", Code: 301}},
		{name: "permanent 308", in: map[string]string{KeyPermanentRedirect: "http://x.example.com", KeyPermanentRedirectCode: "308"},
			want: &bus.Redirect{URL: "http://x.example.com", Code: 308}},
		{name: "permanent code out of range falls back", in: map[string]string{KeyPermanentRedirect: "http://x.example.com", KeyPermanentRedirectCode: "309"},
			want: &bus.Redirect{URL: "http://x.example.com", Code: 301}, warnKeys: []string{KeyPermanentRedirectCode}},
		{name: "permanent 300 has no Location in NGINX", in: map[string]string{KeyPermanentRedirect: "http://x.example.com", KeyPermanentRedirectCode: "300"},
			want: &bus.Redirect{URL: "http://x.example.com", Code: 300}, warnKeys: []string{KeyPermanentRedirectCode}},
		{name: "temporal default code", in: map[string]string{KeyTemporalRedirect: "https://t.example.com/"},
			want: &bus.Redirect{URL: "https://t.example.com/", Code: 302}},
		{name: "temporal 308 is out of its range", in: map[string]string{KeyTemporalRedirect: "https://t.example.com/", KeyTemporalRedirectCode: "308"},
			want: &bus.Redirect{URL: "https://t.example.com/", Code: 302}, warnKeys: []string{KeyTemporalRedirectCode}},
		{name: "temporal wins over permanent", in: map[string]string{KeyTemporalRedirect: "https://t.example.com/", KeyPermanentRedirect: "https://p.example.com/"},
			want: &bus.Redirect{URL: "https://t.example.com/", Code: 302}, warnKeys: []string{KeyPermanentRedirect}},
		{name: "code without URL", in: map[string]string{KeyPermanentRedirectCode: "301"}, want: nil, warnKeys: []string{KeyPermanentRedirectCode}},
		{name: "URL with $ refused", in: map[string]string{KeyPermanentRedirect: "https://x.example.com/$host"}, want: nil, errKeys: []string{KeyPermanentRedirect}},
		{name: "URL with quote refused", in: map[string]string{KeyPermanentRedirect: `https://x.example.com/";return 200 "x`}, want: nil, errKeys: []string{KeyPermanentRedirect}},
		{name: "relative URL refused", in: map[string]string{KeyPermanentRedirect: "/elsewhere"}, want: nil, errKeys: []string{KeyPermanentRedirect}},
		{name: "other scheme refused", in: map[string]string{KeyTemporalRedirect: "javascript://x"}, want: nil, errKeys: []string{KeyTemporalRedirect}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Parse(tt.in)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Parse = %+v, want %+v", got, tt.want)
			}
			errKeys, warnKeys := plugintest.ErrorKeys(t, errs)
			if !reflect.DeepEqual(errKeys, tt.errKeys) || !reflect.DeepEqual(warnKeys, tt.warnKeys) {
				t.Fatalf("errors %v warnings %v, want %v %v (%+v)", errKeys, warnKeys, tt.errKeys, tt.warnKeys, errs)
			}
			if got != nil {
				f := bus.Features{Redirect: got}
				if err := f.Validate(); err != nil {
					t.Fatalf("features refused: %v", err)
				}
			}
		})
	}
}

// TestDescribePatterns checks that the host's first check (the Pattern,
// anchored as the host anchors it) agrees with the parser on URLs.
func TestDescribePatterns(t *testing.T) {
	patterns := map[string]*regexp.Regexp{}
	for _, a := range New().Describe().Annotations {
		patterns[a.Key] = regexp.MustCompile(`^(?:` + a.Pattern + `)$`)
	}
	for _, v := range []string{"https://a.example.com", "http://a.example.com:8080/x?y=z#f"} {
		if !patterns[KeyPermanentRedirect].MatchString(v) {
			t.Errorf("pattern refuses %q", v)
		}
	}
	for _, v := range []string{"https://a.example.com/$uri", "ftp://a.example.com", "https://a.example.com/ x", "https://a.example.com/{x}"} {
		if patterns[KeyPermanentRedirect].MatchString(v) {
			t.Errorf("pattern accepts %q", v)
		}
	}
	if !patterns[KeySSLRedirect].MatchString("TRUE") || patterns[KeySSLRedirect].MatchString("yes") {
		t.Error("bool pattern is not strconv.ParseBool's")
	}
}

func TestApplyAnswersEachIngress(t *testing.T) {
	batch := []plugins.Ingress{
		{Namespace: "a", Name: "one", Annotations: map[string]string{KeyForceSSLRedirect: "true"}},
		{Namespace: "b", Name: "two", Annotations: map[string]string{KeyPermanentRedirect: "nope"}},
	}
	res := plugintest.Apply(t, New(), batch)
	if len(res) != 2 || res[0].Name != "one" || res[1].Name != "two" {
		t.Fatalf("results %+v", res)
	}
	if res[0].Features.Redirect == nil || res[0].Features.Redirect.ForceSSLRedirect == nil || !*res[0].Features.Redirect.ForceSSLRedirect || len(res[0].Errors) != 0 {
		t.Fatalf("one: %+v", res[0])
	}
	if len(res[1].Errors) != 1 || !strings.Contains(res[1].Errors[0].Message, "URL") {
		t.Fatalf("two: %+v", res[1])
	}
}

// FuzzParse: whatever the annotations hold, Parse does not panic, and
// what it returns passes the host's and renderer's validation and never
// carries a character that could leave a quoted NGINX string.
func FuzzParse(f *testing.F) {
	f.Add("https://x.example.com/a", "301", "true", "false")
	f.Add("http://x.example.com/$host", "999", "yes", "1")
	f.Add(`https://x.example.com/";}`, "30x", "T", "F")
	f.Fuzz(func(t *testing.T, url, code, b1, b2 string) {
		in := map[string]string{
			KeyPermanentRedirect: url, KeyPermanentRedirectCode: code,
			KeyTemporalRedirect: url + "/t", KeyTemporalRedirectCode: code,
			KeySSLRedirect: b1, KeyForceSSLRedirect: b2, KeyFromToWWWRedirect: b1,
		}
		for _, drop := range []string{"", KeyTemporalRedirect} {
			delete(in, drop)
			got, _ := Parse(in)
			f := bus.Features{Redirect: got}
			if err := f.Validate(); err != nil {
				t.Fatalf("Parse returned features Validate refuses: %v", err)
			}
			if got != nil && strings.ContainsAny(got.URL, "\"\\$;{} \t\r\n\x00'") {
				t.Fatalf("URL %q accepted", got.URL)
			}
		}
	})
}
