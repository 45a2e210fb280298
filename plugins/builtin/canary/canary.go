// Package canary is the built-in plugin for ingress-nginx's canary
// annotations. An Ingress with canary: "true" is attached by the translator
// to the Ingress serving the same host, path and path type; this plugin
// turns its annotations into a typed Canary policy, which the annotations
// stage hands to the Lua balancer as the canary backend's
// trafficShapingPolicy.
package canary

import (
	"context"
	"fmt"
	"strconv"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// Annotation keys, relative to the controller's prefix.
const (
	KeyCanary        = "canary"
	KeyHeader        = "canary-by-header"
	KeyHeaderValue   = "canary-by-header-value"
	KeyHeaderPattern = "canary-by-header-pattern"
	KeyCookie        = "canary-by-cookie"
	KeyWeight        = "canary-weight"
	KeyWeightTotal   = "canary-weight-total"
)

// DefaultWeightTotal is canary-weight-total when absent, as in ingress-nginx.
const DefaultWeightTotal = 100

// Plugin is the canary plugin.
type Plugin struct{}

// New returns the plugin (the builtin registry's constructor).
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe names the seven canary annotations.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "canary",
		Doc: "Canary releases (ingress-nginx canary-*): an Ingress marked canary receives part of the traffic of " +
			"the Ingress serving the same host and path, chosen by header, then cookie, then weight.",
		Annotations: []plugins.Annotation{
			{Key: KeyCanary, Pattern: plugins.BoolPattern, Scope: plugins.ScopeIngress, Risk: plugins.RiskLow, Default: "false",
				Doc: `"true" makes this Ingress the canary of the Ingress serving the same host, path and path type.`},
			{Key: KeyHeader, Pattern: `[A-Za-z0-9_-]{1,128}`, Scope: plugins.ScopeIngress, Risk: plugins.RiskMedium,
				Doc: `Request header that decides: "always" routes to the canary, "never" never does, anything else falls through to the cookie and weight.`},
			{Key: KeyHeaderValue, Pattern: `[ !#%&'()*+,\-./0-9:;<=>?@A-Z\[\]^_a-z|~]{1,1000}`, Scope: plugins.ScopeIngress, Risk: plugins.RiskMedium,
				Doc: `With canary-by-header: the exact header value that routes to the canary (instead of "always").`},
			{Key: KeyHeaderPattern, Pattern: `[ !#-&(-~]{1,256}`, Scope: plugins.ScopeIngress, Risk: plugins.RiskMedium,
				Doc: `With canary-by-header and no canary-by-header-value: a regular expression the header value must match to route to the canary. Only a safe subset of regex syntax is accepted (literals, ., simple classes, \d \w \s, groups, |, quantifiers, ^ and $; no nested or ambiguous repetition).`},
			{Key: KeyCookie, Pattern: `[A-Za-z0-9_.-]{1,128}`, Scope: plugins.ScopeIngress, Risk: plugins.RiskMedium,
				Doc: `Cookie that decides when the header did not: "always" routes to the canary, "never" never does.`},
			{Key: KeyWeight, Pattern: `[0-9]{1,7}`, Scope: plugins.ScopeIngress, Risk: plugins.RiskLow, Default: "0",
				Doc: `Requests out of canary-weight-total that go to the canary when neither header nor cookie decided.`},
			{Key: KeyWeightTotal, Pattern: `[0-9]{1,7}`, Scope: plugins.ScopeIngress, Risk: plugins.RiskLow, Default: "100",
				Doc: `The total canary-weight is out of.`},
		},
	}
}

// ApplyIngress parses an Ingress's canary annotations.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (f plugins.Features, errs []plugins.Error) {
	f.Canary, errs = Parse(in.Annotations)
	return f, errs
}

// Parse reads the canary annotations (by their relative keys). It returns
// nil when the Ingress is not a canary. Values already matched the
// patterns of Describe; Parse checks what a pattern cannot say.
func Parse(ann map[string]string) (*features.Canary, []plugins.Error) {
	var errs []plugins.Error
	enabled := false
	if v, ok := ann[KeyCanary]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return nil, []plugins.Error{plugins.Errorf(KeyCanary, "%q is not true or false", v)}
		}
		enabled = b
	}
	if !enabled {
		// ingress-nginx reports "configured but not enabled" and serves
		// the Ingress as a normal one: a warning, not a rejection.
		for _, k := range []string{KeyHeader, KeyHeaderValue, KeyHeaderPattern, KeyCookie, KeyWeight, KeyWeightTotal} {
			if _, ok := ann[k]; ok {
				errs = append(errs, plugins.Error{Key: k, Warning: true,
					Message: "ignored: the Ingress is not a canary (set canary: \"true\")"})
			}
		}
		return nil, errs
	}

	c := &features.Canary{WeightTotal: DefaultWeightTotal, Header: ann[KeyHeader], Cookie: ann[KeyCookie]}
	if v, ok := ann[KeyWeightTotal]; ok {
		n, err := parseCount(v)
		if err != nil || n < 1 || n > features.MaxCanaryWeightTotal {
			errs = append(errs, plugins.Errorf(KeyWeightTotal, "%q is not a whole number between 1 and %d", v, features.MaxCanaryWeightTotal))
		} else {
			c.WeightTotal = n
		}
	}
	if v, ok := ann[KeyWeight]; ok {
		n, err := parseCount(v)
		switch {
		case err != nil:
			errs = append(errs, plugins.Errorf(KeyWeight, "%q is not a whole number", v))
		case n > c.WeightTotal:
			// ingress-nginx sends every request to such a canary; so does
			// the clamped weight, and the owner learns why.
			errs = append(errs, plugins.Error{Key: KeyWeight, Warning: true, Message: fmt.Sprintf(
				"%d is more than canary-weight-total %d; every request goes to the canary", n, c.WeightTotal)})
			c.Weight = c.WeightTotal
		default:
			c.Weight = n
		}
	}
	value, hasValue := ann[KeyHeaderValue]
	pattern, hasPattern := ann[KeyHeaderPattern]
	if (hasValue || hasPattern) && c.Header == "" {
		for _, k := range []string{KeyHeaderValue, KeyHeaderPattern} {
			if _, ok := ann[k]; ok {
				errs = append(errs, plugins.Error{Key: k, Warning: true, Message: "ignored without canary-by-header"})
			}
		}
	} else {
		c.HeaderValue = value
		if hasPattern {
			if err := features.ValidateCanaryPattern(pattern); err != nil {
				errs = append(errs, plugins.Errorf(KeyHeaderPattern, "%v", err))
			} else if hasValue {
				// ingress-nginx: the exact value takes precedence.
				errs = append(errs, plugins.Error{Key: KeyHeaderPattern, Warning: true,
					Message: "ignored: canary-by-header-value is set and takes precedence"})
			} else {
				c.HeaderPattern = pattern
			}
		}
	}
	for _, e := range errs {
		if !e.Warning {
			return nil, errs
		}
	}
	return c, errs
}

// parseCount reads a non-negative decimal number (the pattern allows only
// digits, at most 7).
func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a whole number")
	}
	return n, nil
}
