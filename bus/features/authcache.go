package features

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// External auth's cache, keepalive and extra request headers
// (auth-cache-key, auth-cache-duration, auth-keepalive*,
// auth-proxy-set-headers and the ConfigMap's global-auth-cache-*).

// AuthKeepalive is a pool of idle connections to the auth service
// (auth-keepalive, auth-keepalive-requests, auth-keepalive-timeout,
// auth-keepalive-share-vars). It needs a literal host in the auth URL: an
// NGINX upstream block cannot name a variable.
type AuthKeepalive struct {
	// Connections is the most idle connections each worker keeps.
	Connections int `json:"connections"`
	// Requests is the most requests one connection carries.
	Requests int `json:"requests"`
	// TimeoutSeconds is how long an idle connection stays open.
	TimeoutSeconds int `json:"timeoutSeconds"`
	// ShareVars sends the auth service the request's own X-Request-ID;
	// without it the auth request gets one of its own, as ingress-nginx's
	// separate subrequest does.
	ShareVars bool `json:"shareVars,omitempty"`
}

// Limits of the auth cache and keepalive values.
const (
	MaxAuthCacheKey       = 512
	MaxAuthCacheDurations = 16
	MaxAuthKeepalive      = 10000
	MaxAuthKeepaliveReqs  = 1000000000
	MaxAuthKeepaliveSecs  = 86400
	MaxAuthProxyHeaders   = 64
)

// DefaultAuthCacheDuration is ingress-nginx's auth-cache-duration.
const DefaultAuthCacheDuration = "200 202 401 5m"

// Defaults of auth-keepalive-requests and auth-keepalive-timeout.
const (
	DefaultAuthKeepaliveRequests = 1000
	DefaultAuthKeepaliveTimeout  = 60
)

const (
	// authCacheVarNames are the variables an auth cache key may name:
	// who asks (the credentials' headers and cookies, the basic-auth
	// user, the client address) and what is asked. $http_*, $cookie_* and
	// $arg_* always exist, so NGINX never refuses the key.
	authCacheVarNames = `remote_user|remote_addr|host|http_host|server_name|scheme|request_uri|uri|args|request_method|` +
		`(?:http|cookie|arg)_[a-z0-9_]{1,64}`
	// authCacheStops are the literal characters that cannot continue a
	// variable name.
	authCacheStops = `[.~%!&()*+,=:@/?|-]`
	// AuthCacheKeySource is auth-cache-key: literal characters and the
	// allowed variables, each a whole token ("$" then a name then a
	// character that cannot continue it, or the end). No quote,
	// backslash, brace, ";", space or newline.
	AuthCacheKeySource = `(?:[A-Za-z0-9_]|` + authCacheStops + `|(?:\$(?:` + authCacheVarNames + `))+` + authCacheStops + `)*` +
		`(?:\$(?:` + authCacheVarNames + `))*`
)

var (
	// AuthCacheKeyPattern is AuthCacheKeySource as a whole-string pattern.
	AuthCacheKeyPattern = regexp.MustCompile(`^(?:` + AuthCacheKeySource + `)$`)
	cacheCodePattern    = regexp.MustCompile(`^(?:[1-5][0-9]{2}|any)$`)
	// cacheTimePattern is one NGINX time, units combined ("1h30m").
	cacheTimePattern = regexp.MustCompile(`^(?:[0-9]{1,6}(?:ms|s|m|h|d|w|M|y))+$`)
	// authHostPortPattern is a literal host with an optional port.
	authHostPortPattern = regexp.MustCompile(`^[A-Za-z0-9.-]{1,253}(?::[0-9]{1,5})?$`)
)

// ParseAuthCacheDurations reads auth-cache-duration (and
// global-auth-cache-duration): comma-separated entries, each status codes
// (or "any") then one time, as proxy_cache_valid takes them ("200 202 401
// 5m, 404 1m"). Empty is ingress-nginx's default. Entries come back with
// single spaces.
func ParseAuthCacheDurations(v string) ([]string, error) {
	if strings.TrimSpace(v) == "" {
		return []string{DefaultAuthCacheDuration}, nil
	}
	var out []string
	for _, entry := range strings.Split(v, ",") {
		fields := strings.Fields(entry)
		if len(fields) == 0 {
			continue
		}
		if err := checkCacheDuration(fields); err != nil {
			return nil, fmt.Errorf("entry %d: %w", len(out)+1, err)
		}
		out = append(out, strings.Join(fields, " "))
	}
	if len(out) == 0 {
		return []string{DefaultAuthCacheDuration}, nil
	}
	if len(out) > MaxAuthCacheDurations {
		return nil, fmt.Errorf("%d entries, at most %d", len(out), MaxAuthCacheDurations)
	}
	return out, nil
}

// checkCacheDuration checks one entry: codes, then exactly one time.
func checkCacheDuration(fields []string) error {
	if len(fields) > 20 {
		return errors.New("more than 20 status codes")
	}
	for _, code := range fields[:len(fields)-1] {
		if !cacheCodePattern.MatchString(code) {
			return fmt.Errorf("%q is not an HTTP status code (100 to 599) or \"any\"; an entry is codes then one time such as 5m or 1h30m", clip(code))
		}
	}
	if t := fields[len(fields)-1]; !cacheTimePattern.MatchString(t) {
		return fmt.Errorf("%q is not a time such as 30s, 5m or 1h30m (units ms, s, m, h, d, w, M, y)", clip(t))
	}
	return nil
}

// AuthKeepaliveTarget splits an auth URL for a keepalive upstream: the
// scheme, the literal "host:port" (the port the scheme's unless given) and
// the rest (path and query, possibly empty). ok is false when the scheme
// or host is a variable, which an upstream block cannot name.
func AuthKeepaliveTarget(url string) (scheme, hostPort, rest string, ok bool) {
	scheme, after, found := strings.Cut(url, "://")
	if !found || (scheme != "http" && scheme != "https") {
		return "", "", "", false
	}
	end := strings.IndexAny(after, "/?")
	if end < 0 {
		end = len(after)
	}
	hostPort, rest = after[:end], after[end:]
	if !authHostPortPattern.MatchString(hostPort) {
		return "", "", "", false
	}
	if !strings.Contains(hostPort, ":") {
		port := "80"
		if scheme == "https" {
			port = "443"
		}
		hostPort += ":" + port
	} else if p, _ := strconv.Atoi(hostPort[strings.IndexByte(hostPort, ':')+1:]); p < 1 || p > 65535 {
		return "", "", "", false
	}
	return scheme, hostPort, rest, true
}

// validateCacheAndPool checks the cache, keepalive and extra headers of
// external auth.
func (e *ExternalAuth) validateCacheAndPool() error {
	if e.CacheKey != "" && (len(e.CacheKey) > MaxAuthCacheKey || !AuthCacheKeyPattern.MatchString(e.CacheKey)) {
		return errors.New("external: cache key holds a character or variable that is not allowed")
	}
	if e.CacheKey == "" && len(e.CacheDurations) > 0 {
		return errors.New("external: cache durations without a cache key")
	}
	if len(e.CacheDurations) > MaxAuthCacheDurations {
		return errors.New("external: too many cache durations")
	}
	for i, d := range e.CacheDurations {
		if err := checkCacheDuration(strings.Split(d, " ")); err != nil {
			return fmt.Errorf("external: cacheDurations[%d]: %w", i, err)
		}
	}
	if k := e.Keepalive; k != nil {
		if k.Connections < 1 || k.Connections > MaxAuthKeepalive || k.Requests < 1 || k.Requests > MaxAuthKeepaliveReqs ||
			k.TimeoutSeconds < 1 || k.TimeoutSeconds > MaxAuthKeepaliveSecs {
			return errors.New("external: keepalive connections, requests or timeout out of range")
		}
		if _, _, _, ok := AuthKeepaliveTarget(e.URL); !ok {
			return errors.New("external: keepalive needs a literal http(s) host in the url")
		}
	}
	return ValidAuthProxyHeaders(e.ProxySetHeaders)
}

// ValidAuthProxyHeaders checks auth-proxy-set-headers: header names and
// values as every other header NGINX gets (no "$", quotes, backslash or
// braces), at most MaxAuthProxyHeaders. Errors name the header, never the
// value.
func ValidAuthProxyHeaders(headers []Header) error {
	if len(headers) > MaxAuthProxyHeaders {
		return fmt.Errorf("%d headers for the auth request, at most %d", len(headers), MaxAuthProxyHeaders)
	}
	for _, h := range headers {
		if err := h.validate(); err != nil {
			return err
		}
	}
	return nil
}
