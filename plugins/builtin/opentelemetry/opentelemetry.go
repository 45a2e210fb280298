// Package opentelemetry owns ingress-nginx's request tracing annotations:
// enable-opentelemetry, opentelemetry-trust-incoming-span and
// opentelemetry-operation-name. They override the controller ConfigMap's
// keys of the same names for the Ingress's locations; the requests are
// traced in Lua and the controller exports the spans over OTLP.
package opentelemetry

import (
	"context"
	"fmt"
	"strconv"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeyEnable        = "enable-opentelemetry"
	KeyTrustIncoming = "opentelemetry-trust-incoming-span"
	KeyOperationName = "opentelemetry-operation-name"
)

// operationNameChars is the host's first check: the characters an
// operation name may hold at all; Parse checks the whole name
// (features.OperationNamePattern).
const operationNameChars = `[-A-Za-z0-9 ._/:,$]{0,256}`

// Plugin is the opentelemetry plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "opentelemetry",
		Doc: "Request tracing (W3C traceparent, OpenTelemetry spans exported over OTLP by the controller), done in Lua: " +
			"these annotations override the ConfigMap's keys of the same names for the Ingress.",
		Annotations: []plugins.Annotation{
			plugins.LocationAnnotation(KeyEnable, plugins.BoolPattern, plugins.RiskLow, "the ConfigMap's enable-opentelemetry (false)",
				"Trace the Ingress's requests: continue or start a trace, send traceparent to the backend, record a span (sampled as the ConfigMap's otel-sampler* say)."),
			plugins.LocationAnnotation(KeyTrustIncoming, plugins.BoolPattern, plugins.RiskLow, "the ConfigMap's opentelemetry-trust-incoming-span (true)",
				"Continue the trace of the client's traceparent; false starts a new trace for every request. Takes effect with enable-opentelemetry."),
			plugins.LocationAnnotation(KeyOperationName, operationNameChars, plugins.RiskMedium, "the ConfigMap's opentelemetry-operation-name (the location's path)",
				fmt.Sprintf("The span's name: letters, digits, spaces, . _ / : , - and the variables $%v (e.g. \"HTTP $request_method $service_name $uri\"). Takes effect with enable-opentelemetry.",
					features.OperationNameVariables)),
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	t, errs := Parse(in.Annotations)
	return plugins.Features{Tracing: t}, errs
}

// Parse reads the annotations; nil when enable-opentelemetry is not set
// (the ConfigMap decides). A value that cannot be read rejects the
// Ingress: tracing is not access control, but a silently different span
// name or trust would mislead whoever reads the traces.
func Parse(a map[string]string) (*features.Tracing, []plugins.Error) {
	var errs []plugins.Error
	v, ok := a[KeyEnable]
	if !ok {
		for _, key := range []string{KeyTrustIncoming, KeyOperationName} {
			if _, set := a[key]; set {
				e := plugins.Errorf(key, "has no effect without %s (the ConfigMap's opentelemetry keys apply)", KeyEnable)
				e.Warning = true
				errs = append(errs, e)
			}
		}
		return nil, errs
	}
	enabled, err := strconv.ParseBool(v)
	if err != nil {
		return nil, []plugins.Error{plugins.Errorf(KeyEnable, "is not a boolean")}
	}
	t := &features.Tracing{Enabled: enabled}
	if v, ok := a[KeyTrustIncoming]; ok {
		trust, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Errorf(KeyTrustIncoming, "is not a boolean"))
		}
		t.TrustIncomingSpan = &trust
	}
	if v, ok := a[KeyOperationName]; ok {
		if !features.ValidOperationName(v) {
			errs = append(errs, plugins.Errorf(KeyOperationName,
				"is not letters, digits, spaces, . _ / : , - and the variables $%v (at most %d bytes)",
				features.OperationNameVariables, features.MaxOperationName))
		}
		t.OperationName = v
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return t, nil
}
