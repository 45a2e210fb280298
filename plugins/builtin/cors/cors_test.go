package cors

import (
	"reflect"
	"regexp"
	"slices"
	"testing"

	"switchyard.dev/switchyard/bus/features"
)

func TestParse(t *testing.T) {
	defaults := func(mod func(*features.CORS)) *features.CORS {
		c := &features.CORS{Origins: []string{"*"}, Methods: DefaultMethods, Headers: DefaultHeaders, Credentials: true, MaxAge: DefaultMaxAge}
		if mod != nil {
			mod(c)
		}
		return c
	}
	for _, tc := range []struct {
		name     string
		in       map[string]string
		want     *features.CORS
		warnKeys []string
	}{
		{name: "nothing", in: map[string]string{}},
		{name: "off", in: map[string]string{KeyEnable: "false"}},
		{name: "options without enable-cors warn", in: map[string]string{KeyAllowOrigin: "https://a.example"},
			warnKeys: []string{KeyAllowOrigin}},
		{name: "not a boolean", in: map[string]string{KeyEnable: "yes"}, warnKeys: []string{KeyEnable}},
		{name: "ingress-nginx defaults", in: map[string]string{KeyEnable: "true"}, want: defaults(nil)},
		{name: "every option", in: map[string]string{KeyEnable: "True",
			KeyAllowOrigin: "https://App.example.com:4443, http://*.example.org", KeyAllowMethods: "PUT, GET",
			KeyAllowHeaders: "X-Forwarded-For, X-app123-XPTO", KeyExposeHeaders: "*, X-Total",
			KeyCredentials: "false", KeyMaxAge: "600"},
			want: &features.CORS{Origins: []string{"https://app.example.com:4443", "http://*.example.org"}, Methods: "PUT, GET",
				Headers: "X-Forwarded-For, X-app123-XPTO", ExposeHeaders: "*, X-Total", MaxAge: 600}},
		{name: "a star anywhere allows every origin", in: map[string]string{KeyEnable: "true", KeyAllowOrigin: "https://a.example, *"},
			want: defaults(nil)},
		{name: "a bad origin is skipped", in: map[string]string{KeyEnable: "true", KeyAllowOrigin: "https://a.example, ftp://b.example, https://c.example:99999"},
			want:     defaults(func(c *features.CORS) { c.Origins = []string{"https://a.example"} }),
			warnKeys: []string{KeyAllowOrigin, KeyAllowOrigin}},
		{name: "a trailing slash is dropped", in: map[string]string{KeyEnable: "true", KeyAllowOrigin: "https://a.example/"},
			want:     defaults(func(c *features.CORS) { c.Origins = []string{"https://a.example"} }),
			warnKeys: []string{KeyAllowOrigin}},
		{name: "no usable origin allows none", in: map[string]string{KeyEnable: "true", KeyAllowOrigin: "a.example"},
			want:     defaults(func(c *features.CORS) { c.Origins = []string{} }),
			warnKeys: []string{KeyAllowOrigin, KeyAllowOrigin}},
		{name: "a star in a host is not a wildcard label", in: map[string]string{KeyEnable: "true", KeyAllowOrigin: "https://a*.example"},
			want:     defaults(func(c *features.CORS) { c.Origins = []string{} }),
			warnKeys: []string{KeyAllowOrigin, KeyAllowOrigin}},
		{name: "bad lists fall back to the defaults", in: map[string]string{KeyEnable: "true",
			KeyAllowMethods: "GET, P0ST", KeyAllowHeaders: "X-*", KeyExposeHeaders: ",", KeyCredentials: "maybe", KeyMaxAge: "-1"},
			want:     defaults(nil),
			warnKeys: []string{KeyCredentials, KeyAllowHeaders, KeyAllowMethods, KeyExposeHeaders, KeyMaxAge}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Parse(tc.in)
			var warnKeys []string
			for _, e := range errs {
				if !e.Warning {
					t.Errorf("error %v: CORS annotations only ever warn", e)
				}
				warnKeys = append(warnKeys, e.Key)
			}
			slices.Sort(warnKeys)
			if !reflect.DeepEqual(warnKeys, tc.warnKeys) {
				t.Errorf("warnings on %v, want %v (%v)", warnKeys, tc.warnKeys, errs)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if err := (&features.Features{CORS: got}).Validate(); err != nil {
				t.Errorf("the result does not validate: %v", err)
			}
		})
	}
}

// FuzzParse: whatever the annotations hold, the result validates (so the
// renderer can write it) or there is none.
func FuzzParse(f *testing.F) {
	f.Add("true", "https://a.example, http://*.b.example:8080", "GET, POST", "X-A", "*", "true", "60")
	f.Add("1", "*", "", "", "", "f", "x")
	f.Fuzz(func(t *testing.T, enable, origin, methods, headers, expose, credentials, maxAge string) {
		c, _ := Parse(map[string]string{KeyEnable: enable, KeyAllowOrigin: origin, KeyAllowMethods: methods,
			KeyAllowHeaders: headers, KeyExposeHeaders: expose, KeyCredentials: credentials, KeyMaxAge: maxAge})
		if err := (&features.Features{CORS: c}).Validate(); err != nil {
			t.Fatalf("Parse returned a policy that does not validate: %v (%+v)", err, c)
		}
	})
}

// TestPatternsCompile: the host compiles each pattern whole; one that does
// not compile would leave the plugin out.
func TestPatternsCompile(t *testing.T) {
	for _, a := range (Plugin{}).Describe().Annotations {
		if _, err := regexp.Compile(`^(?:` + a.Pattern + `)$`); err != nil {
			t.Errorf("%s: %v", a.Key, err)
		}
	}
}
