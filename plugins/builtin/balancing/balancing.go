// Package balancing is the built-in plugin for ingress-nginx's load
// balancing annotations: load-balance, upstream-hash-by*, affinity* and
// session-cookie-*. It returns a typed Balancing group; the annotations
// stage puts it on the Ingress's backends, where the Lua balancer reads it,
// so a change is a backend push and never an NGINX reload.
//
// Differences from ingress-nginx, on purpose or by limitation:
//   - A backend (one Service port) is shared by every Ingress using it.
//     When two Ingresses ask for different balancing of one backend, the
//     oldest wins (as in ingress-nginx) and the others get a warning Event.
//   - upstream-hash-by takes literal text and $name variables only (no
//     "${name}", braces or blanks).
//   - load-balance chash, chashsubset and sticky_* are accepted (as the
//     ingress-nginx validator accepts them) but only mean something with
//     upstream-hash-by or affinity; alone they are ignored with a warning.
//   - affinity-canary-behavior is accepted and recorded, but the Lua
//     balancer picks the canary per request (ingress-nginx's "legacy"):
//     "sticky" gets a warning saying so.
//   - session-cookie-path defaults to "/" (ingress-nginx uses the
//     location's path).
package balancing

import (
	"context"
	"fmt"
	"strconv"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// Annotation keys, relative to the controller's prefix.
const (
	KeyLoadBalance            = "load-balance"
	KeyHashBy                 = "upstream-hash-by"
	KeyHashBySubset           = "upstream-hash-by-subset"
	KeyHashBySubsetSize       = "upstream-hash-by-subset-size"
	KeyAffinity               = "affinity"
	KeyAffinityMode           = "affinity-mode"
	KeyAffinityCanaryBehavior = "affinity-canary-behavior"
	KeyCookieName             = "session-cookie-name"
	KeyCookiePath             = "session-cookie-path"
	KeyCookieDomain           = "session-cookie-domain"
	KeyCookieExpires          = "session-cookie-expires"
	KeyCookieMaxAge           = "session-cookie-max-age"
	KeyCookieSecure           = "session-cookie-secure"
	KeyCookieSameSite         = "session-cookie-samesite"
	KeyCookieConditionalNone  = "session-cookie-conditional-samesite-none"
	KeyCookieChangeOnFailure  = "session-cookie-change-on-failure"
)

// cookieKeys are the session-cookie-* keys, which only matter with affinity.
var cookieKeys = []string{KeyAffinityMode, KeyAffinityCanaryBehavior, KeyCookieName, KeyCookiePath, KeyCookieDomain,
	KeyCookieExpires, KeyCookieMaxAge, KeyCookieSecure, KeyCookieSameSite, KeyCookieConditionalNone, KeyCookieChangeOnFailure}

// Patterns. None lets through ";", braces, quotes, "$" (but in a hash
// variable name), blanks or control characters; the bus checks the values
// again, with the same rules as the Lua balancer.
const (
	loadBalancePattern = `round_robin|ewma|chash|chashsubset|sticky_balanced|sticky_persistent`
	// hashByPattern: literal text and $name variables, at most 256 bytes
	// (checked by Parse: a regexp repeat counts tokens).
	hashByPattern     = `(?:\$[A-Za-z0-9_]+|[A-Za-z0-9_.:/|,=@~+-])+`
	cookieNamePattern = `[A-Za-z0-9_.-]{1,128}`
	cookiePathPattern = `/[A-Za-z0-9._~!&()*+=:@/%-]{0,255}`
	// cookieDomainPattern: letters, digits, dots and dashes; Parse checks
	// the labels.
	cookieDomainPattern = `\.?[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?`
	secondsPattern      = `[0-9]{1,10}`
)

// Plugin is the balancing plugin.
type Plugin struct{}

// New returns the plugin (the builtin registry's constructor).
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe names the sixteen balancing annotations, with ingress-nginx's
// risk levels.
func (Plugin) Describe() plugins.Description {
	ing := plugins.ScopeIngress
	return plugins.Description{
		Name: "balancing",
		Doc: "Load balancing (ingress-nginx load-balance, upstream-hash-by*, affinity*, session-cookie-*): how the Lua " +
			"balancer picks an endpoint of the Ingress's backends. Settings belong to the backend (one Service port); when " +
			"Ingresses sharing a backend disagree, the oldest wins (in ingress-nginx's order) and the others get a warning.",
		Annotations: []plugins.Annotation{
			{Key: KeyLoadBalance, Pattern: loadBalancePattern, Scope: ing, Risk: plugins.RiskLow,
				Doc: "round_robin or ewma; overrides the ConfigMap's load-balance. chash and sticky come from upstream-hash-by and affinity."},
			{Key: KeyHashBy, Pattern: hashByPattern, Scope: ing, Risk: plugins.RiskHigh,
				Doc: `Consistent hashing on this key: literal text and NGINX $variables, such as "$request_uri" or "$binary_remote_addr".`},
			{Key: KeyHashBySubset, Pattern: plugins.BoolPattern, Scope: ing, Risk: plugins.RiskLow, Default: "false",
				Doc: "With upstream-hash-by: the key picks a subset of endpoints and the request goes to one of them at random."},
			{Key: KeyHashBySubsetSize, Pattern: `[0-9]{1,4}`, Scope: ing, Risk: plugins.RiskLow, Default: "3",
				Doc: "Endpoints in each subset (1 to 1000)."},
			{Key: KeyAffinity, Pattern: `cookie`, Scope: ing, Risk: plugins.RiskLow,
				Doc: `"cookie": sticky sessions with a cookie; wins over upstream-hash-by and load-balance.`},
			{Key: KeyAffinityMode, Pattern: `balanced|persistent`, Scope: ing, Risk: plugins.RiskMedium, Default: "balanced",
				Doc: "balanced: sessions may move when endpoints scale; persistent: they never move."},
			{Key: KeyAffinityCanaryBehavior, Pattern: `sticky|legacy`, Scope: ing, Risk: plugins.RiskLow, Default: "sticky",
				Doc: "Accepted for compatibility; the canary is chosen per request (ingress-nginx's legacy behaviour)."},
			{Key: KeyCookieName, Pattern: cookieNamePattern, Scope: ing, Risk: plugins.RiskMedium, Default: features.DefaultSessionCookieName,
				Doc: "Name of the session cookie."},
			{Key: KeyCookiePath, Pattern: cookiePathPattern, Scope: ing, Risk: plugins.RiskMedium, Default: "/",
				Doc: "Path attribute of the session cookie."},
			{Key: KeyCookieDomain, Pattern: cookieDomainPattern, Scope: ing, Risk: plugins.RiskMedium,
				Doc: "Domain attribute of the session cookie."},
			{Key: KeyCookieExpires, Pattern: secondsPattern, Scope: ing, Risk: plugins.RiskMedium,
				Doc: "Expires attribute of the session cookie, in seconds from now."},
			{Key: KeyCookieMaxAge, Pattern: secondsPattern, Scope: ing, Risk: plugins.RiskMedium,
				Doc: "Max-Age attribute of the session cookie, in seconds."},
			{Key: KeyCookieSecure, Pattern: plugins.BoolPattern, Scope: ing, Risk: plugins.RiskLow, Default: "false",
				Doc: "Secure attribute of the session cookie."},
			{Key: KeyCookieSameSite, Pattern: `None|Lax|Strict`, Scope: ing, Risk: plugins.RiskLow,
				Doc: "SameSite attribute of the session cookie."},
			{Key: KeyCookieConditionalNone, Pattern: plugins.BoolPattern, Scope: ing, Risk: plugins.RiskLow, Default: "false",
				Doc: "With SameSite None: leave SameSite out for browsers known to mishandle it."},
			{Key: KeyCookieChangeOnFailure, Pattern: plugins.BoolPattern, Scope: ing, Risk: plugins.RiskLow, Default: "false",
				Doc: "When the session's endpoint fails, pick another and rewrite the cookie."},
		},
	}
}

// ApplyIngress parses an Ingress's balancing annotations.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (f plugins.Features, errs []plugins.Error) {
	f.Balancing, errs = Parse(in.Annotations)
	return f, errs
}

// Parse reads the balancing annotations (by their relative keys). It
// returns nil when none applies. Values already matched the patterns of
// Describe; Parse checks what a pattern cannot say, with the bus's checks
// (the ones the host and the renderer apply again), each reported on its
// own annotation.
func Parse(ann map[string]string) (*features.Balancing, []plugins.Error) {
	p := parser{ann: ann}
	b := &features.Balancing{}
	b.UpstreamHash = p.hash()
	b.Affinity = p.affinity()
	if b.Affinity != nil {
		if v, ok := ann[KeyAffinityCanaryBehavior]; ok {
			b.AffinityCanaryBehavior = v
			if v == "sticky" {
				p.warn(KeyAffinityCanaryBehavior, "accepted, but the canary is chosen per request (legacy): a session does not stick to the canary")
			}
		}
		if b.UpstreamHash != nil {
			p.warn(KeyHashBy, "ignored: affinity is set and wins over upstream-hash-by")
			b.UpstreamHash = nil
		}
	}
	if v, ok := ann[KeyLoadBalance]; ok {
		switch v {
		case features.LoadBalanceRoundRobin, features.LoadBalanceEWMA:
			if b.Affinity != nil || b.UpstreamHash != nil {
				p.warn(KeyLoadBalance, "ignored: affinity or upstream-hash-by decides the balancing")
			} else {
				b.LoadBalance = v
			}
		case features.LoadBalanceCHash, features.LoadBalanceCHashSubset:
			if b.UpstreamHash == nil {
				p.warn(KeyLoadBalance, v+" needs upstream-hash-by; ignored")
			}
		case features.LoadBalanceStickyBalanced, features.LoadBalanceStickyPersistent:
			if b.Affinity == nil {
				p.warn(KeyLoadBalance, v+` needs affinity: "cookie"; ignored`)
			}
		default:
			p.fail(KeyLoadBalance, "%q is not an algorithm: want round_robin or ewma", v)
		}
	}
	if p.failed {
		return nil, p.errs
	}
	if *b == (features.Balancing{}) {
		return nil, p.errs
	}
	return b, p.errs
}

// parser collects the errors of one Ingress.
type parser struct {
	ann    map[string]string
	errs   []plugins.Error
	failed bool
}

func (p *parser) warn(key, msg string) {
	p.errs = append(p.errs, plugins.Error{Key: key, Message: msg, Warning: true})
}

func (p *parser) fail(key, format string, args ...any) {
	p.errs = append(p.errs, plugins.Errorf(key, format, args...))
	p.failed = true
}

func (p *parser) bool(key string) bool {
	v, ok := p.ann[key]
	if !ok {
		return false
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		p.fail(key, "%q is not true or false", v)
	}
	return b
}

// hash reads upstream-hash-by and its subset settings.
func (p *parser) hash() *features.UpstreamHashByConfig {
	by, ok := p.ann[KeyHashBy]
	if !ok {
		for _, k := range []string{KeyHashBySubset, KeyHashBySubsetSize} {
			if _, set := p.ann[k]; set {
				p.warn(k, "ignored without upstream-hash-by")
			}
		}
		return nil
	}
	h := &features.UpstreamHashByConfig{UpstreamHashBy: by, Subset: p.bool(KeyHashBySubset)}
	if err := h.Validate(); err != nil || by == "" {
		p.fail(KeyHashBy, "%s: want literal text and $variable names ([A-Za-z0-9_]), 1 to 256 characters", quote(by))
		return nil
	}
	if v, ok := p.ann[KeyHashBySubsetSize]; ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < 1 || n > 1000:
			p.fail(KeyHashBySubsetSize, "%q is not a whole number from 1 to 1000", v)
		case !h.Subset:
			p.warn(KeyHashBySubsetSize, "ignored without upstream-hash-by-subset: \"true\"")
		default:
			h.SubsetSize = n
		}
	}
	if h.Subset && h.SubsetSize == 0 {
		h.SubsetSize = features.DefaultHashBySubsetSize
	}
	return h
}

// affinity reads affinity, affinity-mode and the session cookie.
func (p *parser) affinity() *features.SessionAffinityConfig {
	kind, ok := p.ann[KeyAffinity]
	if !ok {
		for _, k := range cookieKeys {
			if _, set := p.ann[k]; set {
				p.warn(k, `ignored without affinity: "cookie"`)
			}
		}
		return nil
	}
	if kind != features.AffinityCookie {
		p.fail(KeyAffinity, "%s: only \"cookie\" is supported", quote(kind))
		return nil
	}
	a := &features.SessionAffinityConfig{Name: features.AffinityCookie, Mode: features.AffinityModeBalanced}
	if v, ok := p.ann[KeyAffinityMode]; ok {
		if v != features.AffinityModeBalanced && v != features.AffinityModePersistent {
			p.fail(KeyAffinityMode, "%s: want balanced or persistent", quote(v))
		}
		a.Mode = v
	}
	c := &a.CookieSessionAffinity
	c.Name = features.DefaultSessionCookieName
	// Each string attribute is checked alone with the bus's rules, so an
	// error names the annotation at fault.
	type cookie = features.CookieSessionAffinity
	for _, f := range []struct {
		key  string
		set  func(c *cookie, v string)
		want string
	}{
		{KeyCookieName, func(c *cookie, v string) { c.Name = v }, "a cookie name of letters, digits, '.', '_' and '-', at most 128"},
		{KeyCookiePath, func(c *cookie, v string) { c.Path = v }, `an absolute path without ";", "," or blanks, at most 256 characters`},
		{KeyCookieDomain, func(c *cookie, v string) { c.Domain = v }, "a domain name, optionally with a leading dot"},
		{KeyCookieExpires, func(c *cookie, v string) { c.Expires = v }, "seconds, at most 10 digits"},
		{KeyCookieMaxAge, func(c *cookie, v string) { c.MaxAge = v }, "seconds, at most 10 digits"},
		{KeyCookieSameSite, func(c *cookie, v string) { c.SameSite = v }, "None, Lax or Strict"},
	} {
		v, ok := p.ann[f.key]
		if !ok {
			continue
		}
		var one features.SessionAffinityConfig
		f.set(&one.CookieSessionAffinity, v)
		if v == "" || one.Validate() != nil {
			p.fail(f.key, "%s: want %s", quote(v), f.want)
			continue
		}
		f.set(c, v)
	}
	c.Secure = p.bool(KeyCookieSecure)
	c.ConditionalSameSiteNone = p.bool(KeyCookieConditionalNone)
	c.ChangeOnFailure = p.bool(KeyCookieChangeOnFailure)
	if c.ConditionalSameSiteNone && c.SameSite != "None" {
		p.warn(KeyCookieConditionalNone, "only matters with session-cookie-samesite: None")
	}
	return a
}

// quote shows a value in a message, cut short so a long value cannot flood
// Events.
func quote(v string) string {
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	return fmt.Sprintf("%q", v)
}
