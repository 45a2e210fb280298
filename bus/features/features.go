package features

import (
	"fmt"
	"reflect"
	"regexp"
)

// Features are the typed results of annotation plugins for one location.
// Plugins never return NGINX text: the renderer decides how each feature is
// written, and Validate checks every value again before it gets there, so a
// plugin (ours or a third party's) cannot smuggle text into nginx.conf.
//
// Each group belongs to one plugin; the host refuses two plugins setting
// the same group for one Ingress.
type Features struct {
	// Deny answers every request of the location with Status: an
	// annotation that must hold but cannot (an auth Secret that is missing,
	// a plugin that is down) fails closed.
	Deny *Deny `json:"deny,omitempty"`
	// ResponseHeaders are added to every response of the location.
	ResponseHeaders []Header `json:"responseHeaders,omitempty"`
	// Canary is the policy of a canary Ingress (features_canary.go).
	Canary *Canary `json:"canary,omitempty"`
	// Auth is basic or external auth (plugin auth).
	Auth *Auth `json:"auth,omitempty"`
	// RateLimit limits requests, connections and bandwidth per client.
	RateLimit *RateLimit `json:"rateLimit,omitempty"`
	Redirect  *Redirect  `json:"redirect,omitempty"` // features_redirect.go
	Rewrite   *Rewrite   `json:"rewrite,omitempty"`  // features_rewrite.go
	// Balancing goes onto the Ingress's backends, not its locations.
	Balancing *Balancing `json:"balancing,omitempty"` // features_balancing.go
	// Proxy is how the location talks to its backend (proxy.go).
	Proxy *Proxy `json:"proxy,omitempty"`
	// Access is who may reach the location by address (access.go).
	Access *Access `json:"access,omitempty"`
	// Upstream is the backend's protocol and the TLS to it (upstream.go).
	Upstream *Upstream `json:"upstream,omitempty"`
	// Server goes onto the server of the Ingress's hosts (server.go).
	Server *Server `json:"server,omitempty"`
	// Logs are the location's log settings (logs.go).
	Logs *Logs `json:"logs,omitempty"`
	// Errors are custom-http-errors and default-backend (errors.go).
	Errors *Errors `json:"errors,omitempty"`
	// CORS is enable-cors and the cors-* annotations (cors.go).
	CORS *CORS `json:"cors,omitempty"`
	// ClientAuth goes onto the server of the Ingress's hosts: mutual TLS
	// (clientauth.go).
	ClientAuth *ClientAuth `json:"clientAuth,omitempty"`
	// Mirror sends a copy of each request elsewhere (mirror.go).
	Mirror *Mirror `json:"mirror,omitempty"`
	// GlobalAuth is enable-global-auth (auth plugin, auth.go).
	GlobalAuth *GlobalAuth `json:"globalAuth,omitempty"`
	// Passthrough goes onto the server of the Ingress's hosts: TLS handed
	// to the backend unterminated (passthrough.go).
	Passthrough *Passthrough `json:"passthrough,omitempty"`
	// ModSecurity is the web application firewall (modsecurity.go).
	ModSecurity *ModSecurity `json:"modSecurity,omitempty"`
	// Tracing is the Ingress's request tracing (tracing.go).
	Tracing *Tracing `json:"tracing,omitempty"`
}

// Deny is a fixed answer in place of the backend.
type Deny struct {
	Status int `json:"status"`
	// Reason is for people (logs, Events); it is never sent to clients.
	Reason string `json:"reason"`
}

// Header is one HTTP header.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

var (
	// headerNamePattern is an RFC 9110 token without "$", which NGINX
	// would read as a variable.
	headerNamePattern = regexp.MustCompile(`^[A-Za-z0-9!#%&'*+.^_|~-]{1,128}$`)
	// headerValuePattern is visible ASCII and spaces, without quotes,
	// backslashes, "$", "{" or "}". A ";" is allowed: header values need it
	// and it is harmless inside the quoted string NGINX gets.
	headerValuePattern = regexp.MustCompile(`^[ !#%&'()*+,\-./0-9:;<=>?@A-Z\[\]^_` + "`" + `a-z|~]{0,1000}$`)
)

// Validate checks every value of f against a whole-string pattern. It is
// the host's check of what a plugin returned, and the renderer's again.
func (f *Features) Validate() error {
	if f == nil {
		return nil
	}
	if f.Deny != nil && (f.Deny.Status < 200 || f.Deny.Status > 599) {
		return fmt.Errorf("deny: status %d is not an HTTP status", f.Deny.Status)
	}
	for i, h := range f.ResponseHeaders {
		if err := h.validate(); err != nil {
			return fmt.Errorf("responseHeaders[%d]: %w", i, err)
		}
	}
	if f.Canary != nil {
		if err := f.Canary.validate(); err != nil {
			return fmt.Errorf("canary: %w", err)
		}
	}
	if f.Auth != nil {
		if err := f.Auth.validate(); err != nil {
			return fmt.Errorf("auth: %w", err)
		}
	}
	if f.RateLimit != nil {
		if err := f.RateLimit.validate(); err != nil {
			return fmt.Errorf("rateLimit: %w", err)
		}
	}
	if err := f.Redirect.validate(); err != nil {
		return fmt.Errorf("redirect: %w", err)
	}
	if err := f.Rewrite.validate(); err != nil {
		return fmt.Errorf("rewrite: %w", err)
	}
	if err := f.Balancing.validate(); err != nil {
		return fmt.Errorf("balancing: %w", err)
	}
	if err := f.Proxy.validate(); err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	if err := f.Server.validate(); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if err := f.Access.validate(); err != nil {
		return fmt.Errorf("access: %w", err)
	}
	if err := f.Upstream.validate(); err != nil {
		return fmt.Errorf("upstream: %w", err)
	}
	if err := f.Errors.validate(); err != nil {
		return fmt.Errorf("errors: %w", err)
	}
	if err := f.CORS.validate(); err != nil {
		return fmt.Errorf("cors: %w", err)
	}
	if err := f.ClientAuth.validate(); err != nil {
		return fmt.Errorf("clientAuth: %w", err)
	}
	if err := f.Mirror.validate(); err != nil {
		return fmt.Errorf("mirror: %w", err)
	}
	if err := f.ModSecurity.validate(); err != nil {
		return fmt.Errorf("modSecurity: %w", err)
	}
	if err := f.Tracing.validate(); err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	if f.Passthrough != nil && !f.Passthrough.Enabled {
		return fmt.Errorf("passthrough: a group that is not enabled")
	}
	return nil
}

// Validate checks a header's name and value (header names and values that
// do not come from a plugin: the controller ConfigMap's add-headers).
func (h Header) Validate() error { return h.validate() }

func (h Header) validate() error {
	if !headerNamePattern.MatchString(h.Name) {
		return fmt.Errorf("header name %q is not an HTTP token", h.Name)
	}
	if !headerValuePattern.MatchString(h.Value) {
		return fmt.Errorf("header %s: value holds a character that is not allowed (quotes, backslash, $, braces or control characters) or is over 1000 bytes", h.Name)
	}
	return nil
}

// IsZero reports whether f holds no feature.
func (f *Features) IsZero() bool {
	// Pointers, not values: a Features copied into an interface is an
	// allocation, once per Ingress.
	return f == nil || reflect.DeepEqual(f, &Features{})
}
