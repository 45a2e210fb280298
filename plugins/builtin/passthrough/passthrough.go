// Package passthrough owns ingress-nginx's ssl-passthrough annotation: TLS
// connections for the Ingress's hosts are handed to the backend of the
// host's "/" path without being terminated, routed by their SNI name. It
// returns features.Passthrough; the annotations stage puts it on the
// servers of the Ingress's hosts, and it only takes effect when the
// controller runs with --enable-ssl-passthrough (as in ingress-nginx).
package passthrough

import (
	"context"
	"strconv"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// KeySSLPassthrough is the annotation this plugin owns.
const KeySSLPassthrough = "ssl-passthrough"

// Plugin is the passthrough plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "passthrough",
		Doc:  "TLS passthrough: TLS connections for the Ingress's hosts go, by SNI name and without being terminated, to the backend of the host's \"/\" path. Needs --enable-ssl-passthrough.",
		Annotations: []plugins.Annotation{
			{Key: KeySSLPassthrough, Pattern: plugins.BoolPattern, Scope: plugins.ScopeIngress, Risk: plugins.RiskLow, Default: "false",
				Doc: "true: the backend of the host's \"/\" path terminates TLS itself and clients see its certificate; every other path, the host's TLS settings and annotations that act on HTTP requests do not apply to HTTPS (plain HTTP is served as usual). Without --enable-ssl-passthrough it is a warning and the host is terminated by NGINX."},
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	p, errs := Parse(in.Annotations)
	return plugins.Features{Passthrough: p}, errs
}

// Parse turns the annotation into the Passthrough group, nil when it is
// absent or false.
func Parse(a map[string]string) (*features.Passthrough, []plugins.Error) {
	v, ok := a[KeySSLPassthrough]
	if !ok {
		return nil, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return nil, []plugins.Error{{Key: KeySSLPassthrough, Message: "not a boolean"}}
	}
	if !on {
		return nil, nil
	}
	return &features.Passthrough{Enabled: true}, nil
}
