// Package redirect is the built-in plugin for ingress-nginx's redirect
// annotations: ssl-redirect, force-ssl-redirect, preserve-trailing-slash,
// permanent-redirect(-code), temporal-redirect(-code) and
// from-to-www-redirect.
package redirect

import (
	"context"
	"net/http"
	"strconv"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// Annotation keys, relative to the controller's prefix.
const (
	KeySSLRedirect           = "ssl-redirect"
	KeyForceSSLRedirect      = "force-ssl-redirect"
	KeyPreserveTrailingSlash = "preserve-trailing-slash"
	KeyPermanentRedirect     = "permanent-redirect"
	KeyPermanentRedirectCode = "permanent-redirect-code"
	KeyTemporalRedirect      = "temporal-redirect"
	KeyTemporalRedirectCode  = "temporal-redirect-code"
	KeyFromToWWWRedirect     = "from-to-www-redirect"
)

// boolPattern is what strconv.ParseBool reads, as ingress-nginx's
// GetBoolAnnotation does.
const boolPattern = `1|t|T|TRUE|true|True|0|f|F|FALSE|false|False`

// urlPattern is the host's first check; features.RedirectURLPattern is the
// same rule, anchored.
var urlPattern = features.RedirectURLPattern.String()[1 : len(features.RedirectURLPattern.String())-1]

// Plugin implements plugins.Plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	b := func(key, doc, def string, risk plugins.Risk) plugins.Annotation {
		return plugins.Annotation{Key: key, Pattern: boolPattern, Scope: plugins.ScopeLocation, Risk: risk, Doc: doc, Default: def}
	}
	return plugins.Description{
		Name: "redirect",
		Doc:  "HTTPS redirects, fixed permanent or temporary redirects and the www redirect, as ingress-nginx.",
		Annotations: []plugins.Annotation{
			b(KeySSLRedirect, "Redirect plain HTTP to HTTPS (308) when the host has TLS.", "ConfigMap ssl-redirect (true)", plugins.RiskLow),
			b(KeyForceSSLRedirect, "Redirect plain HTTP to HTTPS (308) even when the host has no TLS.", "ConfigMap force-ssl-redirect", plugins.RiskMedium),
			b(KeyPreserveTrailingSlash, "Keep a trailing slash of the URI in the HTTPS redirect.", "ConfigMap preserve-trailing-slash", plugins.RiskMedium),
			b(KeyFromToWWWRedirect, "Redirect www.<host> to <host> (or <host> to www.<host> for a www host) with 308.", "false", plugins.RiskLow),
			{Key: KeyPermanentRedirect, Pattern: urlPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium,
				Doc: "Answer every request with a permanent redirect to this http(s) URL."},
			{Key: KeyPermanentRedirectCode, Pattern: `[0-9]{3}`, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow,
				Doc: "Status of permanent-redirect, 300-308.", Default: "301"},
			{Key: KeyTemporalRedirect, Pattern: urlPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium,
				Doc: "Answer every request with a temporary redirect to this http(s) URL; it wins over permanent-redirect."},
			{Key: KeyTemporalRedirectCode, Pattern: `[0-9]{3}`, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow,
				Doc: "Status of temporal-redirect, 300-307.", Default: "302"},
		},
	}
}

// ApplyIngress implements plugins.IngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (f plugins.Features, errs []plugins.Error) {
	f.Redirect, errs = Parse(in.Annotations)
	return f, errs
}

// Parse turns one Ingress's redirect annotations into the Redirect group
// (nil when they change nothing) and the problems found.
func Parse(a map[string]string) (*features.Redirect, []plugins.Error) {
	var errs []plugins.Error
	red := &features.Redirect{}
	boolean := func(key string) bool {
		v, ok := a[key]
		if !ok {
			return false
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Errorf(key, "%q is not true or false", v))
		}
		return b
	}
	// Set or not: unset keeps the ConfigMap's value.
	optional := func(key string) *bool {
		v, ok := a[key]
		if !ok {
			return nil
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Errorf(key, "%q is not true or false", v))
			return nil
		}
		return &b
	}
	red.SSLRedirect = optional(KeySSLRedirect)
	red.ForceSSLRedirect = optional(KeyForceSSLRedirect)
	red.PreserveTrailingSlash = optional(KeyPreserveTrailingSlash)
	red.FromToWWW = boolean(KeyFromToWWWRedirect)

	// temporal-redirect wins over permanent-redirect, as in ingress-nginx.
	switch {
	case a[KeyTemporalRedirect] != "":
		red.URL, red.Code = fixedRedirect(a, KeyTemporalRedirect, KeyTemporalRedirectCode, http.StatusFound, http.StatusTemporaryRedirect, &errs)
		if a[KeyPermanentRedirect] != "" {
			errs = append(errs, plugins.Error{Key: KeyPermanentRedirect, Warning: true,
				Message: "ignored: temporal-redirect is set too, and it wins"})
		}
	case a[KeyPermanentRedirect] != "":
		red.URL, red.Code = fixedRedirect(a, KeyPermanentRedirect, KeyPermanentRedirectCode, http.StatusMovedPermanently, http.StatusPermanentRedirect, &errs)
	default:
		for _, key := range []string{KeyPermanentRedirectCode, KeyTemporalRedirectCode} {
			if _, ok := a[key]; ok {
				errs = append(errs, plugins.Error{Key: key, Warning: true, Message: "ignored: no redirect URL is set"})
			}
		}
	}
	if *red == (features.Redirect{}) {
		return nil, errs
	}
	return red, errs
}

// fixedRedirect reads a redirect URL and its code. A code out of range
// falls back to the default, as in ingress-nginx, with a warning so the
// owner learns of it.
func fixedRedirect(a map[string]string, urlKey, codeKey string, def, maxCode int, errs *[]plugins.Error) (string, int) {
	url := a[urlKey]
	if !features.RedirectURLPattern.MatchString(url) {
		*errs = append(*errs, plugins.Errorf(urlKey, "%q is not an http(s) URL without quotes, backslashes, $, ;, braces or spaces", cut(url)))
		return "", 0
	}
	code := def
	if v, ok := a[codeKey]; ok {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil || n < http.StatusMultipleChoices || n > maxCode:
			*errs = append(*errs, plugins.Error{Key: codeKey, Warning: true,
				Message: "\"" + cut(v) + "\" is not a redirect code from 300 to " + strconv.Itoa(maxCode) + "; using " + strconv.Itoa(def)})
		default:
			code = n
		}
	}
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		// ingress-nginx accepts these too; NGINX then sends the URL as
		// the body and no Location header.
		*errs = append(*errs, plugins.Error{Key: codeKey, Warning: true,
			Message: "NGINX sends no Location header with status " + strconv.Itoa(code) + "; the URL becomes the body"})
	}
	return url, code
}

func cut(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}
