package features

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestParseAuthCacheDurations(t *testing.T) {
	cases := []struct {
		in   string
		want []string // nil: an error
	}{
		{"", []string{DefaultAuthCacheDuration}},
		{" , ", []string{DefaultAuthCacheDuration}},
		{"200 202 401 5m", []string{"200 202 401 5m"}},
		{"200  1m, 401 30s,any 1h30m", []string{"200 1m", "401 30s", "any 1h30m"}},
		{"5m", []string{"5m"}},
		{"200 1h 30m", nil}, // proxy_cache_valid takes one time
		{"200", nil},
		{"600 5m", nil},
		{"20 5m", nil},
		{"200 5x", nil},
		{"200 5m;", nil},
		{strings.Repeat("200 1m,", MaxAuthCacheDurations+1), nil},
	}
	for _, c := range cases {
		got, err := ParseAuthCacheDurations(c.in)
		if (err != nil) != (c.want == nil) || !slices.Equal(got, c.want) {
			t.Errorf("%q: got %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestAuthCacheKeyPattern(t *testing.T) {
	for key, ok := range map[string]bool{
		"$remote_user$http_authorization": true,
		"$cookie__oauth2_proxy":           true,
		"tenant-$arg_t:$uri":              true,
		"static":                          true,
		"$remote_userx":                   false, // an unknown variable NGINX would refuse
		"$remote_user_x":                  false,
		"${host}":                         false,
		"$request_body":                   false,
		"$hostname":                       false,
		`a"b`:                             false,
		"a b":                             false,
		"a;b":                             false,
		"a\nb":                            false,
		"$":                               false,
	} {
		if got := AuthCacheKeyPattern.MatchString(key); got != ok {
			t.Errorf("%q: match %v, want %v", key, got, ok)
		}
	}
}

func TestAuthKeepaliveTarget(t *testing.T) {
	for url, want := range map[string][3]string{
		"http://auth.ns.svc/check?x=1": {"http", "auth.ns.svc:80", "/check?x=1"},
		"https://auth:8443":            {"https", "auth:8443", ""},
		"https://auth?x":               {"https", "auth:443", "?x"},
		"https://$host/auth":           {},
		"$scheme://auth/x":             {},
		"http://auth:0/x":              {},
		"http://auth:70000/x":          {},
	} {
		scheme, hostPort, rest, ok := AuthKeepaliveTarget(url)
		if got := [3]string{scheme, hostPort, rest}; got != want || ok != (want[0] != "") {
			t.Errorf("%q: got %q %v, want %q", url, got, ok, want)
		}
	}
}

var authCacheVarName = regexp.MustCompile(`^(?:` + authCacheVarNames + `)$`)

// cacheDurationToken is what may reach proxy_cache_valid.
var cacheDurationToken = regexp.MustCompile(`^(?:[1-5][0-9]{2}|any|(?:[0-9]+(?:ms|s|m|h|d|w|M|y))+)$`)

// FuzzAuthCacheValues: whatever the input, a parsed duration is codes and
// one time, and an accepted cache key can never end its quoted string or
// name a variable outside the allowed ones.
func FuzzAuthCacheValues(f *testing.F) {
	f.Add("200 202 401 5m, 404 1m")
	f.Add("$remote_user$http_authorization")
	f.Add("200 5m;return 200")
	f.Add("$remote_user/x-$http_a")
	f.Fuzz(func(t *testing.T, v string) {
		if durations, err := ParseAuthCacheDurations(v); err == nil {
			for _, d := range durations {
				for _, tok := range strings.Split(d, " ") {
					if !cacheDurationToken.MatchString(tok) {
						t.Fatalf("%q: duration %q holds %q", v, d, tok)
					}
				}
			}
		}
		if !AuthCacheKeyPattern.MatchString(v) {
			return
		}
		if strings.ContainsAny(v, "\"'\\;{} \r\n\t\x00") {
			t.Fatalf("%q: accepted cache key can end its quoted string", v)
		}
		for _, part := range strings.Split(v, "$")[1:] {
			// NGINX reads a variable name as far as name characters go.
			end := strings.IndexFunc(part, func(r rune) bool {
				return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
			})
			name := part
			if end >= 0 {
				name = part[:end]
			}
			if !authCacheVarName.MatchString(name) {
				t.Fatalf("%q: variable %q is not allowed", v, name)
			}
		}
	})
}
