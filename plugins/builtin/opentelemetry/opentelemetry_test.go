package opentelemetry

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus/features"
)

func TestParse(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name string
		in   map[string]string
		want *features.Tracing
		errs int
	}{
		{"nothing: the ConfigMap decides", map[string]string{}, nil, 0},
		{"on", map[string]string{KeyEnable: "true"}, &features.Tracing{Enabled: true}, 0},
		{"off overrides the ConfigMap", map[string]string{KeyEnable: "false"}, &features.Tracing{}, 0},
		{"trust off", map[string]string{KeyEnable: "1", KeyTrustIncoming: "false"}, &features.Tracing{Enabled: true, TrustIncomingSpan: &no}, 0},
		{"trust on", map[string]string{KeyEnable: "1", KeyTrustIncoming: "True"}, &features.Tracing{Enabled: true, TrustIncomingSpan: &yes}, 0},
		{"name with variables", map[string]string{KeyEnable: "true", KeyOperationName: "HTTP $request_method $service_name $uri"},
			&features.Tracing{Enabled: true, OperationName: "HTTP $request_method $service_name $uri"}, 0},
		{"a header variable is refused", map[string]string{KeyEnable: "true", KeyOperationName: "HTTP $http_authorization"}, nil, 1},
		{"a variable prefix is refused", map[string]string{KeyEnable: "true", KeyOperationName: "$urix"}, nil, 1},
		{"a lone dollar is refused", map[string]string{KeyEnable: "true", KeyOperationName: "a $ b"}, nil, 1},
		{"a quote is refused", map[string]string{KeyEnable: "true", KeyOperationName: `a" b`}, nil, 1},
		{"too long", map[string]string{KeyEnable: "true", KeyOperationName: strings.Repeat("a", 257)}, nil, 1},
		{"not a boolean", map[string]string{KeyEnable: "yes"}, nil, 1},
		{"trust not a boolean", map[string]string{KeyEnable: "true", KeyTrustIncoming: "maybe"}, nil, 1},
		{"trust without enable: a warning", map[string]string{KeyTrustIncoming: "false"}, nil, 1},
	}
	for _, c := range cases {
		got, errs := Parse(c.in)
		if !reflect.DeepEqual(got, c.want) || len(errs) != c.errs {
			t.Errorf("%s: got %+v, %v; want %+v, %d errors", c.name, got, errs, c.want, c.errs)
		}
	}
}

// The host's character check admits every valid name (it runs first).
func TestHostPatternAdmitsValidNames(t *testing.T) {
	host := regexp.MustCompile(`^(?:` + operationNameChars + `)$`)
	for _, name := range []string{"", "HTTP $request_method $uri", "$namespace/$ingress_name:$status", strings.Repeat("a", 256)} {
		if !features.ValidOperationName(name) || !host.MatchString(name) {
			t.Errorf("%q: valid %v, host pattern %v", name, features.ValidOperationName(name), host.MatchString(name))
		}
	}
}

// FuzzOperationName: Parse never panics, and a name it accepts holds no
// character that could leave a quoted string and every "$" starts an
// allowed variable.
func FuzzOperationName(f *testing.F) {
	f.Add("HTTP $request_method $uri")
	f.Add("$http_cookie")
	f.Add("a\"b")
	f.Fuzz(func(t *testing.T, name string) {
		got, errs := Parse(map[string]string{KeyEnable: "true", KeyOperationName: name})
		if len(errs) > 0 {
			return
		}
		if got == nil || got.OperationName != name || len(name) > features.MaxOperationName {
			t.Fatalf("accepted %q as %+v", name, got)
		}
		if strings.ContainsAny(name, "\"'\\{};\r\n\x00") {
			t.Fatalf("accepted %q", name)
		}
		for rest := name; ; {
			i := strings.IndexByte(rest, '$')
			if i < 0 {
				break
			}
			rest = rest[i+1:]
			ok := false
			for _, v := range features.OperationNameVariables {
				if strings.HasPrefix(rest, v) && (len(rest) == len(v) || !isWord(rest[len(v)])) {
					ok = true
				}
			}
			if !ok {
				t.Fatalf("accepted %q: a $ that is not an allowed variable", name)
			}
		}
	})
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}
