// Package rewrite is the built-in plugin for ingress-nginx's rewrite
// annotations: rewrite-target, use-regex, app-root and x-forwarded-prefix.
package rewrite

import (
	"context"
	"strconv"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// Annotation keys, relative to the controller's prefix.
const (
	KeyRewriteTarget    = "rewrite-target"
	KeyUseRegex         = "use-regex"
	KeyAppRoot          = "app-root"
	KeyXForwardedPrefix = "x-forwarded-prefix"
)

// unanchored returns a bus pattern without its ^ and $, for the host's
// first check (the host anchors it again).
func unanchored(s string) string { return s[1 : len(s)-1] }

// Plugin implements plugins.Plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "rewrite",
		Doc:  "URI rewriting with regex paths, the application root redirect and X-Forwarded-Prefix, as ingress-nginx.",
		Annotations: []plugins.Annotation{
			{Key: KeyRewriteTarget, Pattern: unanchored(features.RewriteTargetPattern.String()), Scope: plugins.ScopeIngress, Risk: plugins.RiskMedium,
				Doc: "The URI sent upstream; $1-$9 are the path regex's capture groups. It makes this Ingress's paths regular expressions, as use-regex does."},
			{Key: KeyUseRegex, Pattern: plugins.BoolPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "false",
				Doc: "Treat the paths of this Ingress (all of them, as ingress-nginx) as case-insensitive regular expressions anchored at the start. Unlike ingress-nginx, other Ingresses of the host keep Exact and Prefix paths, and no regex takes a request under a path protected by auth. Only a safe subset of regex syntax is accepted (literals, ., simple classes, groups, |, quantifiers; no nested or ambiguous repetition)."},
			{Key: KeyAppRoot, Pattern: unanchored(features.URIPathPattern.String()), Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium,
				Doc: "Redirect a request for / to this path with 302."},
			{Key: KeyXForwardedPrefix, Pattern: unanchored(features.URIPathPattern.String()), Scope: plugins.ScopeLocation, Risk: plugins.RiskMedium,
				Doc: "Send this path upstream as the X-Forwarded-Prefix request header."},
		},
	}
}

// ApplyIngress implements plugins.IngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (f plugins.Features, errs []plugins.Error) {
	f.Rewrite, errs = Parse(in.Annotations)
	return f, errs
}

// Parse turns one Ingress's rewrite annotations into the Rewrite group
// (nil when they change nothing) and the problems found.
func Parse(a map[string]string) (*features.Rewrite, []plugins.Error) {
	var errs []plugins.Error
	rw := &features.Rewrite{}
	if v, ok := a[KeyUseRegex]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Errorf(KeyUseRegex, "%q is not true or false", cut(v)))
		}
		rw.UseRegex = b
	}
	for _, key := range []string{KeyRewriteTarget, KeyAppRoot, KeyXForwardedPrefix} {
		if v, ok := a[key]; ok && len(v) > features.MaxRewriteValue {
			errs = append(errs, plugins.Errorf(key, "%q is over %d bytes", cut(v), features.MaxRewriteValue))
		}
	}
	if v, ok := a[KeyRewriteTarget]; ok && len(v) <= features.MaxRewriteValue {
		if v == "" || !features.RewriteTargetPattern.MatchString(v) {
			errs = append(errs, plugins.Errorf(KeyRewriteTarget,
				"%q is not a path whose only $ are capture references $1-$9 (no quotes, backslashes, ;, braces or spaces)", cut(v)))
		} else {
			rw.Target = v
		}
	}
	if v, ok := a[KeyAppRoot]; ok && len(v) <= features.MaxRewriteValue {
		if !features.URIPathPattern.MatchString(v) || v == "/" {
			errs = append(errs, plugins.Errorf(KeyAppRoot,
				"%q is not a path other than / (no quotes, backslashes, $, ;, braces, ? or spaces)", cut(v)))
		} else {
			rw.AppRoot = v
		}
	}
	if v, ok := a[KeyXForwardedPrefix]; ok && len(v) <= features.MaxRewriteValue {
		if !features.URIPathPattern.MatchString(v) {
			errs = append(errs, plugins.Errorf(KeyXForwardedPrefix,
				"%q is not a path (no quotes, backslashes, $, ;, braces, ? or spaces)", cut(v)))
		} else {
			rw.XForwardedPrefix = v
		}
	}
	if *rw == (features.Rewrite{}) {
		return nil, errs
	}
	return rw, errs
}

func cut(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}
