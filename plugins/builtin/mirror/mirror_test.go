package mirror

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins/plugintest"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]string
		want    *features.Mirror
		errKey  string
		warnKey string
	}{
		{name: "nothing", in: map[string]string{}},
		{name: "host alone warns", in: map[string]string{KeyHost: "m.example.com"}, warnKey: KeyHost},
		{name: "ingress-nginx's example", in: map[string]string{KeyTarget: "https://test.env.com$request_uri"},
			want: &features.Mirror{Target: "https://test.env.com$request_uri", Host: "test.env.com"}},
		{name: "host without the port", in: map[string]string{KeyTarget: "http://127.0.0.1:9000/copy?from=$host"},
			want: &features.Mirror{Target: "http://127.0.0.1:9000/copy?from=$host", Host: "127.0.0.1"}},
		{name: "every option", in: map[string]string{KeyTarget: "https://m.example.com$uri", KeyHost: "other.example.com", KeyRequestBody: "off"},
			want: &features.Mirror{Target: "https://m.example.com$uri", Host: "other.example.com", NoBody: true}},
		{name: "a client-chosen host rejects", in: map[string]string{KeyTarget: "https://$http_host/x"}, errKey: KeyTarget},
		{name: "a host glued to a variable rejects", in: map[string]string{KeyTarget: "https://m.example.com$host"}, errKey: KeyTarget},
		{name: "a longer variable name rejects", in: map[string]string{KeyTarget: "https://m.example.com$request_urix"}, errKey: KeyTarget},
		{name: "an injection rejects", in: map[string]string{KeyTarget: `https://m.example.com/"; load_module /tmp/x.so; #`}, errKey: KeyTarget},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Parse(tc.in)
			errKeys, warnKeys := plugintest.ErrorKeys(t, errs)
			errKey, warnKey := strings.Join(errKeys, ","), strings.Join(warnKeys, ",")
			if errKey != tc.errKey || warnKey != tc.warnKey {
				t.Fatalf("errors on %q, warnings on %q; want %q, %q (%v)", errKey, warnKey, tc.errKey, tc.warnKey, errs)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDescribe: the host's patterns refuse what Parse refuses, so a value
// is judged the same wherever it is checked.
func TestDescribe(t *testing.T) {
	for _, a := range New().Describe().Annotations {
		re, err := regexp.Compile(`^(?:` + a.Pattern + `)$`)
		if err != nil {
			t.Fatalf("%s: %v", a.Key, err)
		}
		if a.Key == KeyTarget && (re.MatchString("https://$http_host/") || re.MatchString(`https://x/"`)) {
			t.Errorf("%s accepts a client-chosen host or a quote", a.Key)
		}
	}
}

// FuzzParse: what Parse returns always validates, and never holds what
// could end a quoted NGINX string.
func FuzzParse(f *testing.F) {
	f.Add("https://test.env.com$request_uri", "", "on")
	f.Add("http://a:1/b?c=$host&d", "h", "off")
	f.Fuzz(func(t *testing.T, target, host, body string) {
		got, _ := Parse(map[string]string{KeyTarget: target, KeyHost: host, KeyRequestBody: body})
		if err := (&features.Features{Mirror: got}).Validate(); err != nil {
			t.Fatalf("Parse returned %+v, which does not validate: %v", got, err)
		}
		if got != nil && strings.ContainsAny(got.Target+got.Host, "\"'\\;{} \r\n") {
			t.Fatalf("Parse let through %+v", got)
		}
	})
}
