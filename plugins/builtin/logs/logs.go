// Package logs owns the per-location log annotations of ingress-nginx:
// enable-access-log and enable-rewrite-log.
package logs

import (
	"context"
	"strconv"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeyEnableAccessLog  = "enable-access-log"
	KeyEnableRewriteLog = "enable-rewrite-log"
)

// Plugin is the logs plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "logs",
		Doc:  "Per-location logging: leave requests out of the access log, or log rewrites.",
		Annotations: []plugins.Annotation{
			{Key: KeyEnableAccessLog, Pattern: plugins.BoolPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "true",
				Doc: "false: the Ingress's requests are not written to the access log."},
			{Key: KeyEnableRewriteLog, Pattern: plugins.BoolPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Default: "false",
				Doc: "true: NGINX logs the Ingress's rewrites (notice level, error log)."},
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	l, errs := Parse(in.Annotations)
	return plugins.Features{Logs: l}, errs
}

// Parse turns the annotations into the Logs group, nil when it changes
// nothing.
func Parse(a map[string]string) (*features.Logs, []plugins.Error) {
	l := &features.Logs{}
	var errs []plugins.Error
	if v, ok := a[KeyEnableAccessLog]; ok {
		on, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Error{Key: KeyEnableAccessLog, Message: "not a boolean"})
		}
		l.AccessLogOff = err == nil && !on
	}
	if v, ok := a[KeyEnableRewriteLog]; ok {
		on, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Error{Key: KeyEnableRewriteLog, Message: "not a boolean"})
		}
		l.RewriteLog = err == nil && on
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if *l == (features.Logs{}) {
		return nil, nil
	}
	return l, nil
}
