package features

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Auth is the auth plugin's group: basic auth against an htpasswd file
// and/or an external auth service asked through NGINX's auth_request (both
// must then pass, as in ingress-nginx).
type Auth struct {
	Basic    *BasicAuth    `json:"basic,omitempty"`
	External *ExternalAuth `json:"external,omitempty"`
}

// BasicAuth is HTTP basic auth.
type BasicAuth struct {
	Realm string `json:"realm"`
	// Users are htpasswd lines ("user:hash"). They are secret: the renderer
	// writes them to a file whose path it derives itself, and they never
	// appear in logs or errors.
	Users []string `json:"users"`
}

// GlobalAuth is enable-global-auth of an Ingress (auth plugin): Off keeps
// the ConfigMap's global-auth-url away from its locations.
type GlobalAuth struct {
	Off bool `json:"off"`
}

// ExternalAuth asks URL about every request; 2xx lets it through, 401 and
// 403 are answered to the client, anything else is a 500.
type ExternalAuth struct {
	URL    string `json:"url"`
	Method string `json:"method,omitempty"`
	// SigninURL is where a 401 is redirected, with the original URL in the
	// query parameter SigninRedirectParam.
	SigninURL           string `json:"signinURL,omitempty"`
	SigninRedirectParam string `json:"signinRedirectParam,omitempty"`
	// ResponseHeaders are copied from the auth response to the upstream
	// request.
	ResponseHeaders []string `json:"responseHeaders,omitempty"`
	// RequestRedirect is sent to the auth service as X-Auth-Request-Redirect
	// (default: the request URI).
	RequestRedirect string `json:"requestRedirect,omitempty"`
	// AlwaysSetCookie is auth-always-set-cookie: the auth service's
	// Set-Cookie reaches the client on every answer, not only on
	// successful ones.
	AlwaysSetCookie bool `json:"alwaysSetCookie,omitempty"`
	// CacheKey is auth-cache-key: the auth service's answers are cached
	// under it (scoped to the server and location), for CacheDurations
	// (proxy_cache_valid entries, "200 202 401 5m").
	CacheKey       string   `json:"cacheKey,omitempty"`
	CacheDurations []string `json:"cacheDurations,omitempty"`
	// Keepalive keeps connections to the auth service open.
	Keepalive *AuthKeepalive `json:"keepalive,omitempty"`
	// ProxySetHeaders are auth-proxy-set-headers' ConfigMap: headers set on
	// the request to the auth service.
	ProxySetHeaders []Header `json:"proxySetHeaders,omitempty"`
}

// NGINX variables allowed in auth-url, auth-signin and
// auth-request-redirect: those oauth2-proxy and authentik recipes use.
// A variable is a whole token: "$" is followed by one of these names and
// then by a character that cannot continue a name (or the end), so
// "$hostx" or "${host}" never pass. $escaped_request_uri is declared by
// the locations that use it (templates/auth.tmpl).
const (
	authVarNames = `host|http_host|best_http_host|server_name|server_port|scheme|pass_access_scheme|` +
		`request_uri|escaped_request_uri|uri|args|is_args|request_method|remote_addr`
	// authVarChars are the literal characters of a path or query.
	authVarChars = `[A-Za-z0-9._~%!&()*+,=:@/?-]`
	// authVarStops are authVarChars that cannot continue a variable name.
	authVarStops = `[.~%!&()*+,=:@/?-]`
	// authVarTail is a path and query where variables may appear.
	authVarTail = `(?:` + authVarChars + `|(?:\$(?:` + authVarNames + `))+` + authVarStops + `)*(?:\$(?:` + authVarNames + `))*`
	// AuthURLSource is an http(s) URL, the scheme, host and port literal
	// or a variable of their kind, then a path and query where the allowed
	// variables may appear. No quote, backslash, brace, ";" or space
	// (CVE-2025-24514 injected NGINX directives through auth-url).
	AuthURLSource = `(?:https?|\$scheme|\$pass_access_scheme)://` +
		`(?:[A-Za-z0-9.-]{1,253}|\$host|\$http_host|\$best_http_host|\$server_name)` +
		`(?::(?:[0-9]{1,5}|\$server_port))?` +
		`(?:[/?]` + authVarTail + `)?`
	// AuthRedirectSource is a URL or path for X-Auth-Request-Redirect,
	// with the allowed variables.
	AuthRedirectSource = `(?:[A-Za-z0-9._~%!&'()*+,=:@/?-]|(?:\$(?:` + authVarNames + `))+[.~%!&'()*+,=:@/?-])*(?:\$(?:` + authVarNames + `))*`
)

var (
	// AuthURLPattern is AuthURLSource as a whole-string pattern.
	AuthURLPattern = regexp.MustCompile(`^(?:` + AuthURLSource + `)$`)
	// AuthMethodPattern is an HTTP method.
	AuthMethodPattern = regexp.MustCompile(`^(GET|HEAD|POST|PUT|PATCH|DELETE|CONNECT|OPTIONS|TRACE)$`)
	// authHeaderPattern is a header name that maps to an NGINX variable
	// name ($upstream_http_x_user): letters, digits and "-".
	authHeaderPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)
	// AuthRealmPattern is printable ASCII without quotes, backslash, "$" or
	// braces.
	AuthRealmPattern = regexp.MustCompile(`^[A-Za-z0-9 !#%&'()*+,./:;<=>?@\[\]^_|~-]{0,128}$`)
	// htpasswdLinePattern is "user:hash": a user without ":" and a hash,
	// both visible ASCII without whitespace.
	htpasswdLinePattern = regexp.MustCompile(`^[!-9;-~]{1,256}:[!-~]{1,512}$`)
	// AuthParamPattern is a query parameter name.
	AuthParamPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	// AuthRedirectPattern is a URL or path for X-Auth-Request-Redirect.
	AuthRedirectPattern = regexp.MustCompile(`^(?:` + AuthRedirectSource + `)$`)
)

// MaxHtpasswdUsers bounds one htpasswd file.
const MaxHtpasswdUsers = 10000

func (a *Auth) validate() error {
	if a.Basic == nil && a.External == nil {
		return errors.New("neither basic nor external auth is set")
	}
	if b := a.Basic; b != nil {
		if !AuthRealmPattern.MatchString(b.Realm) {
			return errors.New("basic: realm holds a character that is not allowed or is over 128 bytes")
		}
		if len(b.Users) == 0 || len(b.Users) > MaxHtpasswdUsers {
			return fmt.Errorf("basic: %d users, want 1 to %d", len(b.Users), MaxHtpasswdUsers)
		}
		for i, u := range b.Users {
			if !htpasswdLinePattern.MatchString(u) {
				// The line is secret: say which one, never what it holds.
				return fmt.Errorf("basic: users[%d] is not a user:hash line", i)
			}
		}
	}
	if e := a.External; e != nil {
		if !AuthURLPattern.MatchString(e.URL) || len(e.URL) > 2048 {
			return errors.New("external: url is not an http(s) URL of allowed characters")
		}
		if e.Method != "" && !AuthMethodPattern.MatchString(e.Method) {
			return errors.New("external: method is not an HTTP method")
		}
		if e.SigninURL != "" && (!AuthURLPattern.MatchString(e.SigninURL) || len(e.SigninURL) > 2048) {
			return errors.New("external: signin url is not an http(s) URL of allowed characters")
		}
		if e.SigninRedirectParam != "" && !AuthParamPattern.MatchString(e.SigninRedirectParam) {
			return errors.New("external: signin redirect parameter is not a parameter name")
		}
		if len(e.ResponseHeaders) > 64 {
			return errors.New("external: more than 64 response headers")
		}
		for _, h := range e.ResponseHeaders {
			if !authHeaderPattern.MatchString(h) {
				return fmt.Errorf("external: response header %q is not letters, digits and -", h)
			}
		}
		if e.RequestRedirect != "" && (!AuthRedirectPattern.MatchString(e.RequestRedirect) || len(e.RequestRedirect) > 1000) {
			return errors.New("external: request redirect holds a character that is not allowed")
		}
		if err := e.validateCacheAndPool(); err != nil {
			return err
		}
	}
	return nil
}

var headerNamePatternAuth = regexp.MustCompile(`^[A-Za-z0-9-]{1,128}$`)

// MaxAuthResponseHeaders bounds auth-response-headers.
const MaxAuthResponseHeaders = 64

// ParseHeaderList reads "X-User, X-Email" (auth-response-headers,
// global-auth-response-headers): header names, trimmed, without
// duplicates (case-insensitive). It returns a message when a name is not
// letters, digits and "-".
func ParseHeaderList(v string) ([]string, string) {
	if strings.TrimSpace(v) == "" {
		return nil, ""
	}
	var out []string
	seen := map[string]bool{}
	for _, h := range strings.Split(v, ",") {
		h = strings.TrimSpace(h)
		if !headerNamePatternAuth.MatchString(h) {
			return nil, "a header name must be letters, digits and -, 1 to 128 of them"
		}
		if seen[strings.ToLower(h)] {
			continue
		}
		seen[strings.ToLower(h)] = true
		out = append(out, h)
	}
	if len(out) > MaxAuthResponseHeaders {
		return nil, fmt.Sprintf("more than %d headers", MaxAuthResponseHeaders)
	}
	return out, ""
}
