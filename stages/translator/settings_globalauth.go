package translator

import (
	"regexp"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// globalAuthSettings are the ConfigMap's global external auth
// (bus.GlobalAuthSettings), checked with the patterns of the auth-*
// annotations. An unreadable global-auth-url fails closed: the default,
// no auth, would open what the operator closed.
var globalAuthSettings = map[string]settingParser{
	bus.KeyGlobalAuthURL: globalAuthURLSetting(),
	"global-auth-method": patternSetting(func(s *bus.Settings) *string { return &s.GlobalAuthMethod },
		boundedOptional(features.AuthMethodPattern, 16), "an HTTP method such as GET or POST, or empty"),
	"global-auth-signin": patternSetting(func(s *bus.Settings) *string { return &s.GlobalAuthSignin },
		boundedOptional(features.AuthURLPattern, 2048), "an http(s) URL (the auth-signin variables allowed), or empty"),
	"global-auth-signin-redirect-param": patternSetting(func(s *bus.Settings) *string { return &s.GlobalAuthSigninRedirectParam },
		features.AuthParamPattern, "a query parameter name: letters, digits, _ and -"),
	"global-auth-response-headers": setting(func(s *bus.Settings) *[]string { return &s.GlobalAuthResponseHeaders },
		"a comma-separated list of header names (letters, digits and -), or empty", parseAuthHeaderNames, joinWith(",")),
	"global-auth-request-redirect": patternSetting(func(s *bus.Settings) *string { return &s.GlobalAuthRequestRedirect },
		boundedOptional(features.AuthRedirectPattern, 1000), "a URL or path (the auth-request-redirect variables allowed), or empty"),
	"global-auth-always-set-cookie": boolSetting(func(s *bus.Settings) *bool { return &s.GlobalAuthAlwaysSetCookie }),
	"global-auth-cache-key": patternSetting(func(s *bus.Settings) *string { return &s.GlobalAuthCacheKey },
		boundedOptional(features.AuthCacheKeyPattern, features.MaxAuthCacheKey),
		"a cache key: literal characters and the auth-cache-key variables ($remote_user, $http_NAME, $cookie_NAME, …), or empty for no cache"),
	"global-auth-cache-duration": setting(func(s *bus.Settings) *[]string { return &s.GlobalAuthCacheDuration },
		`comma-separated entries of status codes then one time, as proxy_cache_valid ("200 202 401 5m")`, parseAuthCacheDurations, joinWith(", ")),
	"no-auth-locations": setting(func(s *bus.Settings) *[]string { return &s.NoAuthLocations },
		"a comma-separated list of paths starting with /", parsePathPrefixes, joinWith(",")),
}

func globalAuthURLSetting() settingParser {
	p := patternSetting(func(s *bus.Settings) *string { return &s.GlobalAuthURL }, boundedOptional(features.AuthURLPattern, 2048),
		"an http(s) URL (the auth-url variables allowed), or empty for none")
	p.failClosed = true
	return p
}

// matcher is what patternSetting needs of a pattern.
type matcher interface{ MatchString(string) bool }

type matchFunc func(string) bool

func (f matchFunc) MatchString(s string) bool { return f(s) }

// boundedOptional matches "" or what re matches, at most n bytes long.
func boundedOptional(re *regexp.Regexp, n int) matcher {
	return matchFunc(func(s string) bool { return s == "" || (len(s) <= n && re.MatchString(s)) })
}

// parseAuthHeaderNames reads global-auth-response-headers as the
// annotation's list is read.
func parseAuthHeaderNames(v string) ([]string, bool) {
	names, msg := features.ParseHeaderList(v)
	return names, msg == ""
}

// pathPrefixPattern is a no-auth-locations entry.
var pathPrefixPattern = regexp.MustCompile(`^/[A-Za-z0-9._~!&()*+,=:@%/-]{0,1000}$`)

func parsePathPrefixes(v string) ([]string, bool) {
	return parseList(v, 64, pathPrefixPattern.MatchString)
}

// parseAuthCacheDurations reads global-auth-cache-duration as the
// annotation auth-cache-duration is read.
func parseAuthCacheDurations(v string) ([]string, bool) {
	d, err := features.ParseAuthCacheDurations(v)
	return d, err == nil
}
