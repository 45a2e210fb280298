// Package headers owns the custom-headers annotation: the name of a
// ConfigMap, in the Ingress's namespace, whose data are headers added to
// every response of the Ingress, as in ingress-nginx.
//
// A plugin sees only annotation values and the Secrets they name, not
// ConfigMaps, so the work is split: the host checks the value against the
// pattern below (before anything else, like every owned key); the
// translator, which has every object, reads the ConfigMap, checks each
// header (a token name; a value without CR, LF, NUL, quotes, "$", "\" or
// braces) and rejects the Ingress if the ConfigMap is missing or one header
// is invalid; the annotations stage adds the headers to the Ingress's
// locations. This plugin answers with no features of its own.
package headers

import (
	"context"

	"switchyard.dev/switchyard/plugins"
)

// KeyCustomHeaders is the annotation this plugin owns.
const KeyCustomHeaders = "custom-headers"

// Plugin is the headers plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "headers",
		Doc:  "Response headers from a ConfigMap of the Ingress's namespace (custom-headers), as ingress-nginx adds them.",
		Annotations: []plugins.Annotation{{
			Key: KeyCustomHeaders,
			// "name" or "namespace/name": Kubernetes names; the translator
			// refuses a namespace other than the Ingress's.
			Pattern: plugins.ObjectRefPattern,
			Scope:   plugins.ScopeIngress, Risk: plugins.RiskMedium,
			Doc: "ConfigMap (\"name\" or \"namespace/name\", the Ingress's namespace) whose data are headers added to every response. " +
				"A missing ConfigMap or an invalid header rejects the Ingress.",
		}},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin: the headers come from
// the translator (see the package comment).
func (Plugin) ApplyIngress(context.Context, plugins.Ingress) (plugins.Features, []plugins.Error) {
	return plugins.Features{}, nil
}
