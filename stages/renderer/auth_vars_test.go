package renderer

import (
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// authVarToken is what every "$" of a rendered auth value must start: an
// allowed variable name ending at a character that cannot continue it.
var authVarToken = regexp.MustCompile(`^\$(host|http_host|best_http_host|server_name|server_port|scheme|pass_access_scheme|request_uri|escaped_request_uri|uri|args|is_args|request_method|remote_addr)([^A-Za-z0-9_]|$)`)

func TestAuthURLVariables(t *testing.T) {
	accepted := []string{
		"https://$host/oauth2/start?rd=$escaped_request_uri",
		"https://$host/oauth2/auth",
		"https://$host/outpost.goauthentik.io/start?rd=$scheme://$http_host$escaped_request_uri",
		"$scheme://$best_http_host:$server_port/x?u=$uri$is_args$args",
		"http://auth.ns.svc:4180/oauth2/auth",
		"https://login.example.com/start?rd=https://$host$request_uri",
	}
	refused := []string{
		"https://$hostx/", "https://$host.evil.com/", "https://${host}/", "https://$foo/",
		"https://a/$request_uri_x", "https://a/$", "https://a/$$host", "https://a/$remote_user",
		`https://a/$host";deny all;"`, "https://a/$host b", "https://a/$1", "https://a/x$arg_rd",
	}
	for _, u := range accepted {
		if _, err := quoteAuthURL(u); err != nil {
			t.Errorf("%q refused: %v", u, err)
		}
	}
	for _, u := range refused {
		if q, err := quoteAuthURL(u); err == nil {
			t.Errorf("%q accepted as %s", u, q)
		}
	}
	for _, r := range []string{"$scheme://$host$request_uri", "/back?x=$escaped_request_uri", "'a'"} {
		if !bus.AuthRedirectPattern.MatchString(r) {
			t.Errorf("redirect %q refused", r)
		}
	}
	for _, r := range []string{"$hostx", "$", "a$b", "${uri}", "a;b"} {
		if bus.AuthRedirectPattern.MatchString(r) {
			t.Errorf("redirect %q accepted", r)
		}
	}
}

func TestSigninTarget(t *testing.T) {
	const rd = "=$pass_access_scheme://$http_host$escaped_request_uri"
	for in, want := range map[string]string{
		"https://l/s":     "https://l/s?rd" + rd,
		"https://l/s?a=b": "https://l/s?a=b&rd" + rd,
		"https://$host/s?rd=$escaped_request_uri": "https://$host/s?rd=$escaped_request_uri",
		"https://l/s?rdx=1":                       "https://l/s?rdx=1&rd" + rd,
	} {
		if got := signinTarget(in, "rd"); got != want {
			t.Errorf("signinTarget(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzAuthURLVariables checks that a value the auth URL pattern admits is
// written as one quoted NGINX string whose every "$" starts an allowed
// variable as a whole token.
func FuzzAuthURLVariables(f *testing.F) {
	f.Add("https://$host/oauth2/start?rd=$escaped_request_uri")
	f.Add("$scheme://$http_host$request_uri")
	f.Add("https://a/$host\";x")
	f.Fuzz(func(t *testing.T, u string) {
		q, err := quoteAuthURL(u)
		if err != nil {
			return
		}
		inner := q[1 : len(q)-1]
		if strings.ContainsAny(inner, "\"\\;{} \r\n\x00") {
			t.Fatalf("%q: quoted value %s can end its string", u, q)
		}
		for i := strings.IndexByte(inner, '$'); i >= 0; i = strings.IndexByte(inner[i+1:], '$') + i + 1 {
			if !authVarToken.MatchString(inner[i:]) {
				t.Fatalf("%q: %q is not an allowed whole variable", u, inner[i:])
			}
			if strings.IndexByte(inner[i+1:], '$') < 0 {
				break
			}
		}
	})
}
