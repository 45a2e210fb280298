// Package auth is the built-in auth plugin: ingress-nginx's basic auth
// (auth-type, auth-secret, auth-secret-type, auth-realm) and external auth
// (auth-url, auth-method, auth-signin, auth-response-headers, …).
//
// It fails closed: a basic-auth Ingress whose Secret is missing or holds no
// usable user answers 503, never without auth.
package auth

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// Annotation keys, relative to the annotation prefix.
const (
	KeyType                = "auth-type"
	KeySecret              = "auth-secret"
	KeySecretType          = "auth-secret-type"
	KeyRealm               = "auth-realm"
	KeyURL                 = "auth-url"
	KeyMethod              = "auth-method"
	KeySignin              = "auth-signin"
	KeySigninRedirectParam = "auth-signin-redirect-param"
	KeyResponseHeaders     = "auth-response-headers"
	KeyRequestRedirect     = "auth-request-redirect"
	KeyCacheKey            = "auth-cache-key"
	KeyCacheDuration       = "auth-cache-duration"
	KeyProxySetHeaders     = "auth-proxy-set-headers"
	KeyEnableGlobalAuth    = "enable-global-auth"
	KeyAlwaysSetCookie     = "auth-always-set-cookie"
	KeyKeepalive           = "auth-keepalive"
	KeyKeepaliveRequests   = "auth-keepalive-requests"
	KeyKeepaliveTimeout    = "auth-keepalive-timeout"
	KeyKeepaliveShareVars  = "auth-keepalive-share-vars"
)

// DefaultRealm is ingress-nginx's realm when auth-realm is absent.
const DefaultRealm = "Authentication Required"

// Patterns the host checks before the plugin sees a value. They hold no
// quote, backslash, ";" or brace; "$" only as one of the NGINX variables
// features allows (a whole token).
const (
	urlPattern = features.AuthURLSource
	// secretPattern is a Secret name, optionally "namespace/name": never a
	// path (CVE-2025-24513 was a traversal through the auth file name).
	secretPattern  = plugins.ObjectRefPattern
	headerList     = `[A-Za-z0-9-]+( *, *[A-Za-z0-9-]+)*`
	realmPattern   = `[A-Za-z0-9 !#%&'()*+,./:;<=>?@\[\]^_|~-]{0,128}`
	methodPattern  = `GET|HEAD|POST|PUT|PATCH|DELETE|CONNECT|OPTIONS|TRACE`
	paramPattern   = `[A-Za-z0-9_-]{1,64}`
	redirectValue  = features.AuthRedirectSource
	cacheKeyValue  = features.AuthCacheKeySource
	durationsValue = `[0-9A-Za-z ,]{1,256}`
	integerValue   = `-?[0-9]{1,10}`
)

type plugin struct{}

// New returns the auth plugin.
func New() plugins.Plugin { return plugins.PerIngress(plugin{}) }

func (plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "auth",
		Doc:  "Basic auth from an htpasswd Secret and external auth through an auth service (auth_request), as ingress-nginx.",
		Annotations: []plugins.Annotation{
			{Key: KeyType, Pattern: `basic|digest`, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow,
				Doc: `"basic" turns on basic auth with the users of auth-secret; "digest" is not supported and refused.`},
			{Key: KeySecret, Pattern: secretPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium, SecretRef: true,
				Doc: `Secret of the Ingress's namespace ("name" or "namespace/name") holding the users. A missing Secret answers 503.`},
			{Key: KeySecretType, Pattern: `auth-file|auth-map`, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "auth-file",
				Doc: `"auth-file": key "auth" holds htpasswd lines; "auth-map": each key is a user and its value the hash.`},
			{Key: KeyRealm, Pattern: realmPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium, Default: DefaultRealm,
				Doc: "The basic-auth realm shown by browsers."},
			{Key: KeyURL, Pattern: urlPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskHigh,
				Doc: "URL of the external auth service; 2xx lets the request through, 401/403 are answered to the client, anything else is a 500. May hold the NGINX variables $host, $http_host, $best_http_host, $server_name, $server_port, $scheme, $pass_access_scheme, $request_uri, $escaped_request_uri, $uri, $args, $is_args, $request_method, $remote_addr (whole tokens, nothing else after a $)."},
			{Key: KeyMethod, Pattern: methodPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow,
				Doc: "HTTP method of the request to auth-url (default: the client's)."},
			{Key: KeySignin, Pattern: urlPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskHigh,
				Doc: "Where a 401 from auth-url redirects, with the original URL in the query parameter auth-signin-redirect-param (unless the URL already sets that parameter). May hold the NGINX variables $host, $http_host, $best_http_host, $server_name, $server_port, $scheme, $pass_access_scheme, $request_uri, $escaped_request_uri, $uri, $args, $is_args, $request_method, $remote_addr (whole tokens, nothing else after a $)."},
			{Key: KeySigninRedirectParam, Pattern: paramPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "rd",
				Doc: "Query parameter of auth-signin that carries the original URL."},
			{Key: KeyResponseHeaders, Pattern: headerList, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium,
				Doc: "Comma-separated headers copied from the auth response to the request sent upstream."},
			{Key: KeyRequestRedirect, Pattern: redirectValue, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium,
				Doc: "Value of X-Auth-Request-Redirect sent to auth-url (default: the request URI). May hold the NGINX variables $host, $http_host, $best_http_host, $server_name, $server_port, $scheme, $pass_access_scheme, $request_uri, $escaped_request_uri, $uri, $args, $is_args, $request_method, $remote_addr (whole tokens, nothing else after a $)."},
			{Key: KeyCacheKey, Pattern: cacheKeyValue, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium,
				Doc: "Caches the auth service's answers under this key (with the host and location), e.g. $remote_user$http_authorization. Literal characters (letters, digits and ._~%!&()*+,=:@/?|-) and the variables $remote_user, $remote_addr, $host, $http_host, $server_name, $scheme, $request_uri, $uri, $args, $request_method, $http_NAME, $cookie_NAME, $arg_NAME (whole tokens); at most 512 bytes. The key is hashed before it reaches the cache, so credentials are never written to disk."},
			{Key: KeyCacheDuration, Pattern: durationsValue, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium, Default: features.DefaultAuthCacheDuration,
				Doc: `With auth-cache-key: how long answers are cached, comma-separated entries of status codes (or "any") then one time, as proxy_cache_valid ("200 202 401 5m, 404 1m"). An answer with Cache-Control, Expires or Set-Cookie follows those headers, as in NGINX.`},
			{Key: KeyKeepalive, Pattern: integerValue, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "0",
				Doc: "Idle keepalive connections to the auth service each NGINX worker keeps; 0 opens a connection per auth request. Needs a literal host in auth-url (no variable), else it is 0 with a warning."},
			{Key: KeyKeepaliveRequests, Pattern: integerValue, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "1000",
				Doc: "With auth-keepalive: the most requests one connection carries; 0 or less turns keepalive off with a warning."},
			{Key: KeyKeepaliveTimeout, Pattern: integerValue, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "60",
				Doc: "With auth-keepalive: seconds an idle connection stays open; 0 or less turns keepalive off with a warning."},
			{Key: KeyKeepaliveShareVars, Pattern: plugins.BoolPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "false",
				Doc: "With auth-keepalive: true sends the auth service the request's own X-Request-ID (the backend's); false gives the auth request an X-Request-ID of its own, as ingress-nginx's separate subrequest does."},
			{Key: KeyAlwaysSetCookie, Pattern: plugins.BoolPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "false",
				Doc: "true: the auth service's Set-Cookie reaches the client on every answer; by default only on successful ones."},
			{Key: KeyEnableGlobalAuth, Pattern: plugins.BoolPattern, Scope: plugins.ScopeIngress, Risk: plugins.RiskLow, Default: "true",
				Doc: `"false" keeps the ConfigMap's global-auth-url off the Ingress; an auth-url of its own replaces the global one anyway.`},
			// The translator reads the ConfigMap (CVE-2025-15566: its values
			// are checked like every header and quoted where written).
			{Key: KeyProxySetHeaders, Pattern: secretPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium,
				Doc: "ConfigMap of the Ingress's namespace whose data are headers set on the request to auth-url (names HTTP tokens, values without quotes, backslash, $ or braces). A missing or invalid ConfigMap answers 503 until it is fixed."},
		},
	}
}

// ApplyIngress reads the auth annotations of one Ingress.
func (plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	var r plugins.Result
	a := in.Annotations
	auth := &features.Auth{}
	basic, deny, errs := basicAuth(in)
	r.Errors = append(r.Errors, errs...)
	auth.Basic = basic
	external, errs := externalAuth(a)
	r.Errors = append(r.Errors, errs...)
	auth.External = external
	if deny != nil {
		r.Features.Deny = deny
	}
	if auth.Basic != nil || auth.External != nil {
		r.Features.Auth = auth
	}
	if v, ok := a[KeyEnableGlobalAuth]; ok {
		on, err := strconv.ParseBool(v)
		switch {
		case err != nil:
			r.Errors = append(r.Errors, plugins.Error{Key: KeyEnableGlobalAuth, Warning: true, Message: "is not a boolean; global auth stays on, as in ingress-nginx"})
		case !on:
			r.Features.GlobalAuth = &features.GlobalAuth{Off: true}
		}
	}
	return r.Features, r.Errors
}

// basicAuth reads the basic-auth annotations. A Secret that is missing or
// holds no usable user denies the Ingress (503) with a warning, so the
// paths stay closed rather than dropped to whatever else matches them.
func basicAuth(in plugins.Ingress) (*features.BasicAuth, *features.Deny, []plugins.Error) {
	a := in.Annotations
	authType, hasType := a[KeyType]
	if !hasType {
		var errs []plugins.Error
		for _, key := range []string{KeySecret, KeySecretType, KeyRealm} {
			if _, ok := a[key]; ok {
				errs = append(errs, plugins.Errorf(key, "needs auth-type: basic; without it the paths would be served without auth"))
			}
		}
		return nil, nil, errs
	}
	if authType != "basic" {
		return nil, nil, []plugins.Error{plugins.Errorf(KeyType, "%q is not supported by Switchyard; use basic", authType)}
	}
	ref, ok := a[KeySecret]
	if !ok {
		return nil, nil, []plugins.Error{plugins.Errorf(KeySecret, "is required with auth-type: basic")}
	}
	id, refused := plugins.SecretID(in, KeySecret, ref)
	if refused != nil {
		return nil, nil, []plugins.Error{*refused}
	}
	realm, ok := a[KeyRealm]
	if !ok {
		realm = DefaultRealm
	}
	deny := func(format string, args ...any) (*features.BasicAuth, *features.Deny, []plugins.Error) {
		d, e := plugins.DenyUnusable(KeySecret, "auth-secret "+id+" unusable", fmt.Sprintf(format, args...))
		return nil, d, []plugins.Error{e}
	}
	data, ok := in.Secrets[id]
	if !ok {
		return deny("Secret %s does not exist", id)
	}
	var users []string
	var bad []string
	switch a[KeySecretType] {
	case "", "auth-file":
		file, ok := data["auth"]
		if !ok {
			return deny("Secret %s has no key \"auth\" (auth-secret-type auth-file)", id)
		}
		users, bad = ParseHtpasswd(string(file))
	case "auth-map":
		users, bad = ParseAuthMap(data)
	}
	var errs []plugins.Error
	if len(bad) > 0 {
		// Name where, never what: the lines are secret.
		errs = append(errs, plugins.Error{Key: KeySecret, Warning: true,
			Message: "Secret " + id + ": entries left out (not user:hash with a supported hash): " + strings.Join(bad, ", ")})
	}
	if len(users) == 0 {
		b, d, e := deny("Secret %s holds no usable user", id)
		return b, d, append(errs, e...)
	}
	if len(users) > features.MaxHtpasswdUsers {
		b, d, e := deny("Secret %s holds over %d users", id, features.MaxHtpasswdUsers)
		return b, d, append(errs, e...)
	}
	return &features.BasicAuth{Realm: realm, Users: users}, nil, errs
}

var (
	userPattern = regexp.MustCompile(`^[!-9;-~]{1,256}$`)
	// hashPattern lists the hashes NGINX checks: its own apr1 and SHA/SSHA,
	// and through the system crypt(3) bcrypt, MD5, SHA-256/512, yescrypt
	// and DES crypt.
	hashPattern = regexp.MustCompile(`^(\$apr1\$[./0-9A-Za-z]{0,8}\$[./0-9A-Za-z]{22}` +
		`|\$2[aby]\$[0-9]{2}\$[./0-9A-Za-z]{53}` +
		`|\{SHA\}[A-Za-z0-9+/]{27}=` +
		`|\{SSHA\}[A-Za-z0-9+/]{26,}={0,2}` +
		`|\$1\$[./0-9A-Za-z]{0,8}\$[./0-9A-Za-z]{22}` +
		`|\$[56]\$(rounds=[0-9]{1,9}\$)?[./0-9A-Za-z]{0,16}\$[./0-9A-Za-z]{43,86}` +
		`|\$y\$[./0-9A-Za-z]{1,16}\$[./0-9A-Za-z]{0,86}\$[./0-9A-Za-z]{43}` +
		`|[./0-9A-Za-z]{13})$`)
)

// ParseHtpasswd reads an htpasswd file. It returns the usable "user:hash"
// lines and, for the others, their line numbers (never their content):
// blank lines and "#" comments are skipped, as NGINX skips them.
func ParseHtpasswd(file string) (users []string, bad []string) {
	for i, line := range strings.Split(file, "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		user, hash, ok := strings.Cut(line, ":")
		// htpasswd allows a comment field after the hash; NGINX ends the
		// hash at the next ":".
		hash, _, _ = strings.Cut(hash, ":")
		if ok && userPattern.MatchString(user) && hashPattern.MatchString(hash) {
			users = append(users, user+":"+hash)
			continue
		}
		bad = append(bad, "line "+strconv.Itoa(i+1))
	}
	return users, bad
}

// ParseAuthMap reads an auth-map Secret: each key a user, each value its
// hash. Users come out sorted, so the file does not depend on map order.
func ParseAuthMap(data map[string][]byte) (users []string, bad []string) {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, user := range keys {
		hash := strings.TrimSpace(string(data[user]))
		if userPattern.MatchString(user) && hashPattern.MatchString(hash) {
			users = append(users, user+":"+hash)
			continue
		}
		bad = append(bad, "key "+quoteKey(user))
	}
	return users, bad
}

// quoteKey shows a Secret key (a user name, not secret) cut short.
func quoteKey(k string) string {
	if len(k) > 64 {
		k = k[:64] + "…"
	}
	if !userPattern.MatchString(k) {
		return "(a key of invalid characters)"
	}
	return `"` + k + `"`
}

// externalAuth reads the external-auth annotations. Without auth-url the
// others do nothing, as in ingress-nginx, and each says so.
func externalAuth(a map[string]string) (*features.ExternalAuth, []plugins.Error) {
	url, ok := a[KeyURL]
	if !ok {
		var errs []plugins.Error
		for _, key := range []string{KeyMethod, KeySignin, KeySigninRedirectParam, KeyResponseHeaders, KeyRequestRedirect, KeyAlwaysSetCookie,
			KeyCacheKey, KeyCacheDuration, KeyKeepalive, KeyKeepaliveRequests, KeyKeepaliveTimeout, KeyKeepaliveShareVars, KeyProxySetHeaders} {
			if _, set := a[key]; set {
				errs = append(errs, plugins.Error{Key: key, Warning: true, Message: "has no effect without auth-url"})
			}
		}
		return nil, errs
	}
	e := &features.ExternalAuth{URL: url, Method: a[KeyMethod], SigninURL: a[KeySignin], RequestRedirect: a[KeyRequestRedirect],
		CacheKey: a[KeyCacheKey]}
	if v, ok := a[KeyAlwaysSetCookie]; ok {
		always, err := strconv.ParseBool(v)
		if err != nil {
			return nil, []plugins.Error{plugins.Errorf(KeyAlwaysSetCookie, "is not a boolean")}
		}
		e.AlwaysSetCookie = always
	}
	if errs := checkLengths(e); errs != nil {
		return nil, errs
	}
	if e.SigninURL != "" {
		e.SigninRedirectParam = "rd"
		if p, ok := a[KeySigninRedirectParam]; ok {
			e.SigninRedirectParam = p
		}
	}
	headers, err := ParseHeaderList(a[KeyResponseHeaders])
	if err != "" {
		return nil, []plugins.Error{plugins.Errorf(KeyResponseHeaders, "%s", err)}
	}
	e.ResponseHeaders = headers
	warnings := cache(a, e)
	if slices.ContainsFunc(warnings, func(e plugins.Error) bool { return !e.Warning }) {
		return nil, warnings
	}
	k, more := keepalive(a, e.URL)
	e.Keepalive = k
	return e, append(warnings, more...)
}

// checkLengths bounds the values the patterns leave unbounded.
func checkLengths(e *features.ExternalAuth) []plugins.Error {
	var errs []plugins.Error
	for _, v := range []struct {
		key, value string
		max        int
	}{{KeyURL, e.URL, 2048}, {KeySignin, e.SigninURL, 2048}, {KeyRequestRedirect, e.RequestRedirect, 1000},
		{KeyCacheKey, e.CacheKey, features.MaxAuthCacheKey}} {
		if len(v.value) > v.max {
			errs = append(errs, plugins.Errorf(v.key, "is %d bytes, at most %d allowed", len(v.value), v.max))
		}
	}
	return errs
}

// ParseHeaderList is features.ParseHeaderList (auth-response-headers).
func ParseHeaderList(v string) ([]string, string) { return features.ParseHeaderList(v) }

// cache reads auth-cache-duration next to auth-cache-key (which
// externalAuth took as it is: its pattern is the whole check).
func cache(a map[string]string, e *features.ExternalAuth) []plugins.Error {
	v, set := a[KeyCacheDuration]
	if e.CacheKey == "" {
		if set {
			return []plugins.Error{{Key: KeyCacheDuration, Warning: true, Message: "has no effect without auth-cache-key"}}
		}
		return nil
	}
	durations, err := features.ParseAuthCacheDurations(v)
	if err != nil {
		return []plugins.Error{plugins.Errorf(KeyCacheDuration, "%v", err)}
	}
	e.CacheDurations = durations
	return nil
}

// keepalive reads the auth-keepalive annotations as ingress-nginx does: a
// negative or missing auth-keepalive is 0 (off), and keepalive stays off,
// with a warning, when auth-url's host is a variable or the requests or
// timeout are not positive.
func keepalive(a map[string]string, url string) (*features.AuthKeepalive, []plugins.Error) {
	k := &features.AuthKeepalive{Requests: features.DefaultAuthKeepaliveRequests, TimeoutSeconds: features.DefaultAuthKeepaliveTimeout}
	var errs []plugins.Error
	warn := func(key, msg string) { errs = append(errs, plugins.Error{Key: key, Warning: true, Message: msg}) }
	for _, f := range []struct {
		key      string
		to       *int
		min, max int
	}{
		{KeyKeepalive, &k.Connections, 0, features.MaxAuthKeepalive},
		{KeyKeepaliveRequests, &k.Requests, 1, features.MaxAuthKeepaliveReqs},
		{KeyKeepaliveTimeout, &k.TimeoutSeconds, 1, features.MaxAuthKeepaliveSecs},
	} {
		v, set := a[f.key]
		if !set {
			continue
		}
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n > f.max:
			warn(f.key, fmt.Sprintf("is not a number from %d to %d; keepalive to the auth service stays off", f.min, f.max))
			k.Connections = 0
		case n < f.min:
			warn(f.key, fmt.Sprintf("is below %d; keepalive to the auth service stays off, as in ingress-nginx", f.min))
			k.Connections = 0
		default:
			*f.to = n
		}
	}
	if v, set := a[KeyKeepaliveShareVars]; set {
		k.ShareVars, _ = strconv.ParseBool(v)
	}
	if k.Connections == 0 {
		return nil, append(errs, unusedKeepalive(a, errs)...)
	}
	if _, _, _, ok := features.AuthKeepaliveTarget(url); !ok {
		warn(KeyKeepalive, "needs a literal host in auth-url (an upstream block cannot name a variable); keepalive stays off, as in ingress-nginx")
		return nil, errs
	}
	return k, errs
}

// unusedKeepalive warns about the keepalive options set while
// auth-keepalive is off, unless said already.
func unusedKeepalive(a map[string]string, said []plugins.Error) []plugins.Error {
	var errs []plugins.Error
	for _, key := range []string{KeyKeepaliveRequests, KeyKeepaliveTimeout, KeyKeepaliveShareVars} {
		if _, set := a[key]; set && !slices.ContainsFunc(said, func(e plugins.Error) bool { return e.Key == key }) {
			errs = append(errs, plugins.Error{Key: key, Warning: true, Message: "has no effect without a positive auth-keepalive"})
		}
	}
	return errs
}
