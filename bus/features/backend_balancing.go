package features

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Balancing settings of a Backend: how the Lua balancer picks an endpoint.
// They come from annotations (load-balance, upstream-hash-by*, affinity and
// session-cookie-*), reach the Lua balancer as they are (the JSON follows
// ingress-nginx's Backend shape), and never reach nginx.conf. Lua checks
// them again before use; Validate is the controller-side check.

// Load-balance values the Lua balancer implements.
const (
	LoadBalanceRoundRobin       = "round_robin"
	LoadBalanceEWMA             = "ewma"
	LoadBalanceCHash            = "chash"
	LoadBalanceCHashSubset      = "chashsubset"
	LoadBalanceStickyBalanced   = "sticky_balanced"
	LoadBalanceStickyPersistent = "sticky_persistent"
)

// Affinity values.
const (
	AffinityCookie            = "cookie"
	AffinityModeBalanced      = "balanced"
	AffinityModePersistent    = "persistent"
	DefaultSessionCookieName  = "INGRESSCOOKIE"
	DefaultHashBySubsetSize   = 3
	maxHashBySubsetSize       = 1000
	maxHashByLength           = 256
	maxSessionCookieNameLen   = 128
	maxSessionCookiePathLen   = 256
	maxSessionCookieDomainLen = 253
)

// UpstreamHashByConfig is consistent hashing on a key built from NGINX
// variables ("upstream-hash-by"). With Subset, the key picks a group of
// SubsetSize endpoints and the request goes to one of them at random.
type UpstreamHashByConfig struct {
	UpstreamHashBy string `json:"upstream-hash-by,omitempty"`
	Subset         bool   `json:"upstream-hash-by-subset,omitempty"`
	// SubsetSize is 0 for the default (3).
	SubsetSize int `json:"upstream-hash-by-subset-size,omitempty"`
}

// SessionAffinityConfig is sticky sessions. Name is the affinity type:
// "cookie" is the only one; Mode is "balanced" (default) or "persistent".
type SessionAffinityConfig struct {
	Name                  string                `json:"name"`
	Mode                  string                `json:"mode,omitempty"`
	CookieSessionAffinity CookieSessionAffinity `json:"cookieSessionAffinity"`
}

// CookieSessionAffinity is the session cookie. Expires and MaxAge are
// seconds, as strings, as in ingress-nginx's JSON; empty means unset.
type CookieSessionAffinity struct {
	Name                    string `json:"name,omitempty"`
	Expires                 string `json:"expires,omitempty"`
	MaxAge                  string `json:"maxage,omitempty"`
	Path                    string `json:"path,omitempty"`
	Domain                  string `json:"domain,omitempty"`
	Secure                  bool   `json:"secure,omitempty"`
	SameSite                string `json:"samesite,omitempty"`
	ConditionalSameSiteNone bool   `json:"conditional_samesite_none,omitempty"`
	ChangeOnFailure         bool   `json:"change_on_failure,omitempty"`
}

var (
	// hashByPattern: literal text and $name variables only. No "${...}",
	// no blanks, quotes, braces or semicolons: the value is evaluated by
	// Lua, but nothing odd should reach it either.
	hashByPattern = regexp.MustCompile(`^(?:\$[A-Za-z0-9_]+|[A-Za-z0-9_.:/|,=@~+-])+$`)
	// cookieNamePattern is an RFC 6265 token.
	cookieNamePattern = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
	// cookiePathPattern: an absolute path without ";", "," or blanks,
	// which could add cookie attributes.
	cookiePathPattern = regexp.MustCompile(`^/[A-Za-z0-9._~!$&'()*+=:@/%-]*$`)
	// cookieDomainPattern: DNS labels, optionally with a leading dot.
	cookieDomainPattern = regexp.MustCompile(`^\.?[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$`)
	secondsPattern      = regexp.MustCompile(`^[0-9]{1,10}$`)
	sameSitePattern     = regexp.MustCompile(`^(?:None|Lax|Strict)$`)
)

// Validate checks the hash expression and the subset size.
func (h *UpstreamHashByConfig) Validate() error {
	var errs []error
	if h.UpstreamHashBy == "" {
		if h.Subset || h.SubsetSize != 0 {
			errs = append(errs, errors.New("upstream-hash-by-subset without upstream-hash-by"))
		}
	} else if len(h.UpstreamHashBy) > maxHashByLength || !hashByPattern.MatchString(h.UpstreamHashBy) {
		errs = append(errs, fmt.Errorf("upstream-hash-by %q: want literal text and $variable names ([A-Za-z0-9_]), at most %d characters",
			h.UpstreamHashBy, maxHashByLength))
	}
	if h.SubsetSize < 0 || h.SubsetSize > maxHashBySubsetSize {
		errs = append(errs, fmt.Errorf("upstream-hash-by-subset-size %d: want 1 to %d", h.SubsetSize, maxHashBySubsetSize))
	}
	return errors.Join(errs...)
}

// Validate checks the affinity type, mode and every cookie attribute.
func (a *SessionAffinityConfig) Validate() error {
	var errs []error
	if a.Name != "" && a.Name != AffinityCookie {
		errs = append(errs, fmt.Errorf("name %q: only %q is supported", a.Name, AffinityCookie))
	}
	if a.Mode != "" && a.Mode != AffinityModeBalanced && a.Mode != AffinityModePersistent {
		errs = append(errs, fmt.Errorf("mode %q: want balanced or persistent", a.Mode))
	}
	c := a.CookieSessionAffinity
	check := func(field, value string, max int, pattern *regexp.Regexp, want string) {
		if value != "" && (len(value) > max || !pattern.MatchString(value)) {
			errs = append(errs, fmt.Errorf("cookieSessionAffinity.%s %q: want %s", field, value, want))
		}
	}
	check("name", c.Name, maxSessionCookieNameLen, cookieNamePattern, "a cookie name (RFC 6265 token)")
	check("path", c.Path, maxSessionCookiePathLen, cookiePathPattern, `an absolute path without ";", "," or blanks`)
	check("domain", c.Domain, maxSessionCookieDomainLen, cookieDomainPattern, "a domain name")
	check("expires", c.Expires, 10, secondsPattern, "seconds")
	check("maxage", c.MaxAge, 10, secondsPattern, "seconds")
	check("samesite", c.SameSite, 6, sameSitePattern, "None, Lax or Strict")
	if c.Domain != "" && strings.Contains(c.Domain, "..") {
		errs = append(errs, fmt.Errorf("cookieSessionAffinity.domain %q: empty label", c.Domain))
	}
	return errors.Join(errs...)
}
