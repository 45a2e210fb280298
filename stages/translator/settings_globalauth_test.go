package translator

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

var globalAuthSettingsCases = map[string]keyCases{
	"global-auth-url": {def: "",
		valid: []valid{
			{"", setString(func(s *bus.Settings) *string { return &s.GlobalAuthURL }, "")},
			{"http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth", setString(func(s *bus.Settings) *string { return &s.GlobalAuthURL }, "http://oauth2-proxy.auth.svc.cluster.local/oauth2/auth")},
			{"https://$host/oauth2/auth", setString(func(s *bus.Settings) *string { return &s.GlobalAuthURL }, "https://$host/oauth2/auth")},
		},
		invalid: []string{"oauth2-proxy/auth", `http://a/"; deny all; #`, "http://a/${x}", "http://a/$hostx", "https://" + strings.Repeat("a", 2100)},
	},
	"global-auth-method": {def: "",
		valid:   []valid{{"POST", setString(func(s *bus.Settings) *string { return &s.GlobalAuthMethod }, "POST")}},
		invalid: []string{"post", "GET;"},
	},
	"global-auth-signin": {def: "",
		valid: []valid{{"https://$host/oauth2/start?rd=$escaped_request_uri",
			setString(func(s *bus.Settings) *string { return &s.GlobalAuthSignin }, "https://$host/oauth2/start?rd=$escaped_request_uri")}},
		invalid: []string{"javascript:alert(1)", "https://a/$request_body"},
	},
	"global-auth-signin-redirect-param": {def: "rd",
		valid:   []valid{{"return_to", setString(func(s *bus.Settings) *string { return &s.GlobalAuthSigninRedirectParam }, "return_to")}},
		invalid: []string{"", "a b", "a&b"},
	},
	"global-auth-response-headers": {def: "",
		valid: []valid{{"X-Auth-Request-User, X-Auth-Request-Email",
			setStrings(func(s *bus.Settings) *[]string { return &s.GlobalAuthResponseHeaders }, "X-Auth-Request-User", "X-Auth-Request-Email")}},
		invalid: []string{"X_User", "X-User;"},
	},
	"global-auth-request-redirect": {def: "",
		valid:   []valid{{"https://app.example.com$request_uri", setString(func(s *bus.Settings) *string { return &s.GlobalAuthRequestRedirect }, "https://app.example.com$request_uri")}},
		invalid: []string{`"x"`, "$hostname"},
	},
	"global-auth-cache-key": {def: "",
		valid: []valid{
			{"$remote_user$http_authorization", setString(func(s *bus.Settings) *string { return &s.GlobalAuthCacheKey }, "$remote_user$http_authorization")},
			{"$cookie__oauth2_proxy", setString(func(s *bus.Settings) *string { return &s.GlobalAuthCacheKey }, "$cookie__oauth2_proxy")},
		},
		invalid: []string{`"x"`, "$hostname", "a b", "$remote_userx", "${host}", "x;y", strings.Repeat("k", 513)},
	},
	"global-auth-cache-duration": {def: "200 202 401 5m",
		valid: []valid{
			{"200 1m, 401  30s", setStrings(func(s *bus.Settings) *[]string { return &s.GlobalAuthCacheDuration }, "200 1m", "401 30s")},
			{"", setStrings(func(s *bus.Settings) *[]string { return &s.GlobalAuthCacheDuration }, "200 202 401 5m")},
		},
		invalid: []string{"200 1h 30m", "5x", "200 5m;", "20 5m"},
	},
	"global-auth-always-set-cookie": boolCases(false, func(s *bus.Settings) *bool { return &s.GlobalAuthAlwaysSetCookie }),
	"no-auth-locations": {def: "/.well-known/acme-challenge",
		valid: []valid{
			{"/.well-known/acme-challenge, /healthz", setStrings(func(s *bus.Settings) *[]string { return &s.NoAuthLocations }, "/.well-known/acme-challenge", "/healthz")},
			{"", func(s *bus.Settings) { s.NoAuthLocations = []string{} }},
		},
		invalid: []string{"healthz", "/a b", "/x;"},
	},
}

// TestGlobalAuthURLFailsClosed: an unreadable global-auth-url is marked so
// the renderer denies where it would apply, rather than serving open.
func TestGlobalAuthURLFailsClosed(t *testing.T) {
	s, problems := parseSettings(map[string]string{"global-auth-url": "http://auth/\"; allow all; #"})
	if !s.Unreadable(bus.KeyGlobalAuthURL) || s.GlobalAuthURL != "" {
		t.Fatalf("global-auth-url: unreadable %t, url %q", s.Unreadable(bus.KeyGlobalAuthURL), s.GlobalAuthURL)
	}
	if len(problems) != 1 || !strings.Contains(problems[0].Message, "403") {
		t.Errorf("problems %+v, want one saying the locations answer 403", problems)
	}
}
