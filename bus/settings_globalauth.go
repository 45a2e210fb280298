package bus

import "switchyard.dev/switchyard/bus/features"

// GlobalAuthSettings are the controller ConfigMap's global external auth:
// every location is asked of global-auth-url, as with an Ingress's own
// auth-url, unless its Ingress has an auth-url of its own (which
// replaces it), says enable-global-auth: "false", or its path starts with
// one of no-auth-locations (ingress-nginx's rules).
type GlobalAuthSettings struct {
	GlobalAuthURL                 string   `json:"globalAuthURL,omitempty"`
	GlobalAuthMethod              string   `json:"globalAuthMethod,omitempty"`
	GlobalAuthSignin              string   `json:"globalAuthSignin,omitempty"`
	GlobalAuthSigninRedirectParam string   `json:"globalAuthSigninRedirectParam"`
	GlobalAuthResponseHeaders     []string `json:"globalAuthResponseHeaders,omitempty"`
	GlobalAuthRequestRedirect     string   `json:"globalAuthRequestRedirect,omitempty"`
	GlobalAuthAlwaysSetCookie     bool     `json:"globalAuthAlwaysSetCookie,omitempty"`
	// GlobalAuthCacheKey and GlobalAuthCacheDuration cache the global auth
	// service's answers, as auth-cache-key and auth-cache-duration.
	GlobalAuthCacheKey      string   `json:"globalAuthCacheKey,omitempty"`
	GlobalAuthCacheDuration []string `json:"globalAuthCacheDuration"`
	// NoAuthLocations are path prefixes global auth leaves alone.
	NoAuthLocations []string `json:"noAuthLocations"`
}

// KeyGlobalAuthURL is the key whose unreadable value fails closed: a
// cluster its operator put behind auth must not open on a typo.
const KeyGlobalAuthURL = "global-auth-url"

// defaultGlobalAuthSettings are ingress-nginx's defaults.
func defaultGlobalAuthSettings() GlobalAuthSettings {
	return GlobalAuthSettings{GlobalAuthSigninRedirectParam: "rd", NoAuthLocations: []string{"/.well-known/acme-challenge"},
		GlobalAuthCacheDuration: []string{features.DefaultAuthCacheDuration}}
}

// GlobalExternalAuth is global auth as an Ingress's external auth, nil
// when global-auth-url is not set.
func (g GlobalAuthSettings) GlobalExternalAuth() *ExternalAuth {
	if g.GlobalAuthURL == "" {
		return nil
	}
	e := &ExternalAuth{URL: g.GlobalAuthURL, Method: g.GlobalAuthMethod, SigninURL: g.GlobalAuthSignin,
		ResponseHeaders: g.GlobalAuthResponseHeaders, RequestRedirect: g.GlobalAuthRequestRedirect, AlwaysSetCookie: g.GlobalAuthAlwaysSetCookie}
	if e.SigninURL != "" {
		e.SigninRedirectParam = g.GlobalAuthSigninRedirectParam
	}
	if g.GlobalAuthCacheKey != "" {
		e.CacheKey = g.GlobalAuthCacheKey
		e.CacheDurations = g.GlobalAuthCacheDuration
		if len(e.CacheDurations) == 0 {
			e.CacheDurations = []string{features.DefaultAuthCacheDuration}
		}
	}
	return e
}

// GlobalAuthSkips says whether a location path is one of
// no-auth-locations: ingress-nginx compares by prefix.
func (g GlobalAuthSettings) GlobalAuthSkips(path string) bool {
	return hasPrefixIn(path, g.NoAuthLocations)
}
