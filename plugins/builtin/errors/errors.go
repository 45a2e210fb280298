// Package errors owns ingress-nginx's per-Ingress error annotations:
// custom-http-errors (which backend answers are replaced by an error
// backend's page) and default-backend (a Service of the Ingress's
// namespace that serves those pages, and the Ingress's requests while its
// Service has no ready endpoint).
//
// The translator resolves default-backend's Service into a backend (it has
// the objects); this plugin checks the values and returns the typed group.
package errors

import (
	"context"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeyCustomHTTPErrors = "custom-http-errors"
	KeyDefaultBackend   = "default-backend"
	KeyDisableIntercept = "disable-proxy-intercept-errors"
)

// Plugin is the errors plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "errors",
		Doc:  "Custom error pages per Ingress, and a default backend per Ingress.",
		Annotations: []plugins.Annotation{
			{Key: KeyCustomHTTPErrors, Pattern: `[0-9 ]{3,5}(,[0-9 ]{3,5}){0,199}`, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow,
				Doc: "Comma-separated HTTP statuses from 400 to 599: the backend's answers with one of them are replaced by the " +
					"error backend's page (default-backend's Service when set, else --default-backend-service), which gets X-Code, " +
					"X-Format, X-Original-URI, X-Namespace, X-Ingress-Name, X-Service-Name, X-Service-Port and X-Request-ID. " +
					"Replaces the ConfigMap's custom-http-errors for this Ingress's paths."},
			{Key: KeyDefaultBackend, Pattern: `[a-z]([-a-z0-9]{0,61}[a-z0-9])?`, Scope: plugins.ScopeIngress, Risk: plugins.RiskLow,
				Doc: "A Service of the Ingress's namespace (its first port): it answers the Ingress's requests while their Service " +
					"has no ready endpoint, and serves the pages of custom-http-errors."},
			{Key: KeyDisableIntercept, Pattern: plugins.BoolPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "ConfigMap disable-proxy-intercept-errors",
				Doc: "true: the backend's own error answers reach the client; custom-http-errors pages then replace only NGINX's own errors (no endpoint, timeouts)."},
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	e, errs := Parse(in.Annotations)
	return plugins.Features{Errors: e}, errs
}

// Parse turns the annotations into the Errors group, nil when none is
// set.
func Parse(a map[string]string) (*features.Errors, []plugins.Error) {
	e := &features.Errors{}
	var errs []plugins.Error
	if v, ok := a[KeyCustomHTTPErrors]; ok {
		codes, err := features.ParseErrorCodes(v)
		if err != nil {
			errs = append(errs, plugins.Error{Key: KeyCustomHTTPErrors, Message: err.Error()})
		}
		e.Codes = codes
	}
	if v, ok := a[KeyDefaultBackend]; ok {
		name := strings.TrimSpace(v)
		if !features.ServiceNamePattern.MatchString(name) {
			errs = append(errs, plugins.Error{Key: KeyDefaultBackend, Message: "not the name of a Service of the Ingress's namespace"})
		}
		e.DefaultBackend = name
	}
	if v, ok := a[KeyDisableIntercept]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Error{Key: KeyDisableIntercept, Message: "not a boolean"})
		}
		e.DisableIntercept = &b
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if len(e.Codes) == 0 && e.DefaultBackend == "" && e.DisableIntercept == nil {
		return nil, nil
	}
	return e, nil
}
