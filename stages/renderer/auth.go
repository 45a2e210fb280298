package renderer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// authView is what templates/auth.tmpl sees for one location with auth:
// every value resolved, user-derived ones checked and quoted.
type authView struct {
	// Index makes the location's internal auth locations unique in its
	// server.
	Index    int
	Basic    *basicAuthView
	External *externalAuthView
	// SigninTarget is the signin URL with the redirect parameter (unless
	// the URL sets it already, as in ingress-nginx), a quoted NGINX string
	// where the allowed variables expand; "" when there is no signin URL.
	SigninTarget string
	Headers      []authHeader
	// ProxyHeaders repeats the http block's choices of upstream headers.
	ProxyHeaders proxyHeadersView
	// ProxySetHeaders repeats the http block's proxy-set-headers.
	ProxySetHeaders []headerView
}

// basicAuthView is auth_basic's realm and user file, quoted. We derive the
// file's path from the content's hash, never from user input
// (CVE-2025-24513 was a traversal through a Secret's file name).
type basicAuthView struct{ Realm, UserFile string }

// externalAuthView is the auth subrequest's target (quoted), the
// X-Auth-Request-Redirect value (quoted, or $request_uri) and the method
// (a word the validator allowed, or "").
type externalAuthView struct {
	URL, RequestRedirect, Method string
	// Cache is auth-cache-key's cache, nil without one.
	Cache *authCacheView
	// Keepalive: URL names the keepalive upstream (zones.conf) and Host is
	// the Host header the auth service expects, quoted. OwnRequestID gives
	// the auth request an X-Request-ID of its own (share-vars off).
	Keepalive    bool
	Host         string
	OwnRequestID bool
	// SSLName is the TLS server name (SNI) of an https auth service behind
	// a keepalive upstream, quoted; "" for http.
	SSLName string
	// ProxySetHeaders are auth-proxy-set-headers', quoted.
	ProxySetHeaders []headerView
	// Logged is enable-auth-access-log: the subrequest is logged too.
	Logged bool
}

// authCacheView is the auth subrequest's cache: the key before hashing
// (a quoted NGINX string where the allowed variables expand, scoped to the
// server and location) and proxy_cache_valid's entries.
type authCacheView struct {
	Key   string
	Valid []string
}

// AuthCacheZone is the shared cache of auth answers; zones.conf declares
// it while a location uses it.
const AuthCacheZone = "switchyard_auth_cache"

// authHeader is one auth response header copied upstream.
type authHeader struct {
	Name     string // quoted
	Variable string // "switchyard_auth_3_0", without "$"
	Upstream string // "upstream_http_x_user", without "$"
}

// secretDir holds every file rendered from Secret data (htpasswd files):
// whatever shows rendered files to people (switchyard render) prints these
// redacted.
const secretDir = "auth/"

// SecretDerived says whether the rendered file at path holds content taken
// from a Secret (password hashes), which must never be printed or logged.
func SecretDerived(path string) bool { return strings.HasPrefix(path, secretDir) }

// HtpasswdFile is the content of the htpasswd file of b.
func HtpasswdFile(b *bus.BasicAuth) string { return strings.Join(b.Users, "\n") + "\n" }

// AuthFile is the path of the htpasswd file with the given users.
func AuthFile(b *bus.BasicAuth) string {
	sum := sha256.Sum256([]byte(HtpasswdFile(b)))
	return secretDir + hex.EncodeToString(sum[:16]) + ".htpasswd"
}

// authFor builds the auth view of the location at index i, or nil. The
// features were validated: every value matched its whole-string pattern.
func authFor(i int, l location, host string, settings bus.Settings) (*authView, error) {
	f := l.Features
	if f == nil || f.Auth == nil || f.Deny != nil {
		return nil, nil
	}
	v := &authView{Index: i, ProxyHeaders: newProxyHeadersView(settings)}
	var err error
	if v.ProxySetHeaders, err = headerViews(settings.ProxySetHeaderValues); err != nil {
		return nil, err
	}
	if b := f.Auth.Basic; b != nil {
		if v.Basic, err = newBasicAuthView(b); err != nil {
			return nil, err
		}
	}
	if e := f.Auth.External; e != nil {
		if err := v.resolveExternal(i, e); err != nil {
			return nil, err
		}
		if err := v.External.resolvePool(e, l.Ingress, host, i); err != nil {
			return nil, err
		}
		v.External.Logged = settings.EnableAuthAccessLog
	}
	return v, nil
}

// resolvePool fills in the cache, keepalive and extra headers of the
// external auth of the location at index i of host, from ingress.
func (x *externalAuthView) resolvePool(e *bus.ExternalAuth, ingress, host string, i int) error {
	var err error
	if x.ProxySetHeaders, err = headerViews(headerMap(e.ProxySetHeaders)); err != nil {
		return err
	}
	if e.CacheKey != "" {
		if x.Cache, err = newAuthCacheView(e, host, i); err != nil {
			return err
		}
	}
	if e.Keepalive == nil {
		return nil
	}
	scheme, hostPort, rest, ok := features.AuthKeepaliveTarget(e.URL)
	if !ok {
		return fmt.Errorf("refusing keepalive to auth URL %q: its host is not literal", e.URL)
	}
	x.Keepalive, x.OwnRequestID = true, !e.Keepalive.ShareVars
	// e.URL matched its pattern (resolveExternal); only the host changes.
	if x.URL, err = quoteVariables(scheme + "://" + authUpstreamID(ingress, e) + rest); err != nil {
		return err
	}
	// The Host NGINX sends when proxy_pass names the host itself: the
	// port only when it is not the scheme's.
	host = strings.TrimSuffix(hostPort, map[string]string{"http": ":80", "https": ":443"}[scheme])
	if x.Host, err = quote(host); err != nil || scheme != "https" {
		return err
	}
	name, _, _ := strings.Cut(hostPort, ":")
	x.SSLName, err = quote(name)
	return err
}

// newAuthCacheView scopes the cache key to the server and location, as
// ingress-nginx does, and checks the durations again.
func newAuthCacheView(e *bus.ExternalAuth, host string, i int) (*authCacheView, error) {
	if !features.AuthCacheKeyPattern.MatchString(e.CacheKey) {
		return nil, fmt.Errorf("refusing to write auth cache key %q into nginx.conf", e.CacheKey)
	}
	key, err := quoteVariables(bus.EscapeToken(host) + "/" + strconv.Itoa(i) + "|" + e.CacheKey)
	if err != nil {
		return nil, err
	}
	v := &authCacheView{Key: key, Valid: e.CacheDurations}
	if len(v.Valid) == 0 {
		v.Valid = []string{features.DefaultAuthCacheDuration}
	}
	for _, d := range v.Valid {
		if _, err := features.ParseAuthCacheDurations(d); err != nil || strings.ContainsAny(d, ",") {
			return nil, fmt.Errorf("refusing to write auth cache duration %q into nginx.conf", d)
		}
	}
	return v, nil
}

// headerMap is a header list by name.
func headerMap(headers []bus.Header) map[string]string {
	if len(headers) == 0 {
		return nil
	}
	m := make(map[string]string, len(headers))
	for _, h := range headers {
		m[h.Name] = h.Value
	}
	return m
}

func newBasicAuthView(b *bus.BasicAuth) (*basicAuthView, error) {
	realm, err := quote(b.Realm)
	if err != nil {
		return nil, err
	}
	file, err := quote(AuthFile(b))
	return &basicAuthView{Realm: realm, UserFile: file}, err
}

// resolveExternal fills in the external auth of the location at index i.
func (v *authView) resolveExternal(i int, e *bus.ExternalAuth) error {
	x := &externalAuthView{RequestRedirect: "$request_uri", Method: e.Method}
	var err error
	if x.URL, err = quoteAuthURL(e.URL); err != nil {
		return err
	}
	if e.RequestRedirect != "" {
		if !bus.AuthRedirectPattern.MatchString(e.RequestRedirect) {
			return fmt.Errorf("refusing to write auth request redirect %q into nginx.conf", e.RequestRedirect)
		}
		if x.RequestRedirect, err = quoteVariables(e.RequestRedirect); err != nil {
			return err
		}
	}
	v.External = x
	if e.SigninURL != "" {
		if v.SigninTarget, err = quoteAuthURL(signinTarget(e.SigninURL, e.SigninRedirectParam)); err != nil {
			return err
		}
	}
	for j, h := range e.ResponseHeaders {
		name, err := quote(h)
		if err != nil {
			return err
		}
		v.Headers = append(v.Headers, authHeader{
			Name:     name,
			Variable: "switchyard_auth_" + strconv.Itoa(i) + "_" + strconv.Itoa(j),
			Upstream: "upstream_http_" + strings.ToLower(strings.ReplaceAll(h, "-", "_")),
		})
	}
	return nil
}

// signinTarget is where a 401 redirects: the signin URL, plus the
// original URL in param unless the signin URL sets param itself (then it
// is taken as written, as ingress-nginx does).
func signinTarget(signin, param string) string {
	sep := "?"
	if _, query, ok := strings.Cut(signin, "?"); ok {
		for _, p := range strings.Split(query, "&") {
			if name, _, _ := strings.Cut(p, "="); name == param {
				return signin
			}
		}
		sep = "&"
	}
	return signin + sep + param + "=$pass_access_scheme://$http_host$escaped_request_uri"
}

// quoteAuthURL re-checks an auth URL against its whole-string pattern
// (variables only as whole allowed tokens) and quotes it.
func quoteAuthURL(u string) (string, error) {
	if !bus.AuthURLPattern.MatchString(u) {
		return "", fmt.Errorf("refusing to write auth URL %q into nginx.conf", u)
	}
	return quoteVariables(u)
}

// quoteVariables quotes a value whose "$" are NGINX variables the caller
// checked against a whole-string pattern: it refuses everything else that
// could end or escape the quotes.
func quoteVariables(s string) (string, error) {
	if strings.ContainsAny(s, strings.ReplaceAll(unsafeInQuotes, "$", "")+"{}; ") {
		return "", fmt.Errorf("refusing to write %q into nginx.conf", s)
	}
	return `"` + s + `"`, nil
}

// authFiles are the Secret-derived files a server and its locations need,
// by path: the CA of mutual TLS, htpasswd files, and the certificates and
// keys of upstream TLS.
func authFiles(s *bus.Server) map[string]string {
	files := map[string]string{}
	clientAuthFiles(s, files)
	for _, l := range s.Locations {
		f := l.Features
		if f == nil || f.Deny != nil {
			continue
		}
		if f.Auth != nil && f.Auth.Basic != nil {
			files[AuthFile(f.Auth.Basic)] = HtpasswdFile(f.Auth.Basic)
		}
		if f.Upstream != nil && f.Upstream.TLS != nil {
			upstreamFiles(f.Upstream.TLS, files)
		}
	}
	return files
}

// setAuthFiles records the htpasswd files of the server under key and
// puts or deletes the files whose set of users changed. A file several
// servers share is deleted with its last user.
func (r *Renderer) setAuthFiles(key string, files map[string]string, out *bus.Output) {
	old := r.serverAuth[key]
	for _, path := range old {
		if _, still := files[path]; still {
			continue
		}
		delete(r.authUsers[path], key)
		if len(r.authUsers[path]) == 0 {
			delete(r.authUsers, path)
			delete(r.files, path)
			out.Deletes = append(out.Deletes, fileKey(path))
		}
	}
	for path, content := range files {
		if r.authUsers[path] == nil {
			r.authUsers[path] = map[string]bool{}
		}
		r.authUsers[path][key] = true
		// Put again even if unchanged: the file's name is a hash of its
		// content, and the bus writer does not resend an equal value.
		r.files[path] = true
		putFile(out, path, content)
		// An earlier server of this flush may have deleted it.
		out.Deletes = slices.DeleteFunc(out.Deletes, func(k string) bool { return k == fileKey(path) })
	}
	if len(files) == 0 {
		delete(r.serverAuth, key)
		return
	}
	r.serverAuth[key] = slices.Sorted(maps.Keys(files))
}

// authUpstreamView is a keepalive upstream of an auth service: its
// literal "host:port" and the pool's limits.
type authUpstreamView struct {
	Server                         string
	Connections, Requests, Timeout int
}

// authUpstreamID names the keepalive upstream of an Ingress's auth
// service; a changed host or pool gets a new name, so a reload never sees
// one name declared twice by servers of different generations.
func authUpstreamID(ingress string, e *bus.ExternalAuth) string {
	k := e.Keepalive
	_, hostPort, _, _ := features.AuthKeepaliveTarget(e.URL)
	return ingressID("auth_", ingress, hostPort, strconv.Itoa(k.Connections), strconv.Itoa(k.Requests), strconv.Itoa(k.TimeoutSeconds))
}

// locationAuthUpstreamID is the keepalive upstream of a location's auth
// service, or "".
func locationAuthUpstreamID(l bus.Location) string {
	f := l.Features
	if f == nil || f.Deny != nil || f.Auth == nil || f.Auth.External == nil || f.Auth.External.Keepalive == nil {
		return ""
	}
	return authUpstreamID(l.Ingress, f.Auth.External)
}

// authZones adds what the external auth of l (its own, or global auth
// from settings) declares at http level: the auth cache and a keepalive
// upstream.
func authZones(l bus.Location, settings bus.Settings, zones map[string]zoneView) {
	f := l.Features
	if l.Ingress != "" {
		f = withGlobalAuth(f, l.Path, settings)
	}
	if f == nil || f.Deny != nil || f.Auth == nil || f.Auth.External == nil {
		return
	}
	e := f.Auth.External
	if e.CacheKey != "" {
		zones[AuthCacheZone] = zoneView{ID: AuthCacheZone, AuthCache: true}
	}
	if e.Keepalive == nil {
		return
	}
	_, hostPort, _, ok := features.AuthKeepaliveTarget(e.URL)
	if !ok {
		return // resolvePool refuses the location
	}
	id := authUpstreamID(l.Ingress, e)
	zones[id] = zoneView{ID: id, Ingress: l.Ingress, AuthUpstream: &authUpstreamView{Server: hostPort,
		Connections: e.Keepalive.Connections, Requests: e.Keepalive.Requests, Timeout: e.Keepalive.TimeoutSeconds}}
}
