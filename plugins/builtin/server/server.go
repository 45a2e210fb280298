// Package server owns the annotations that set the server (the host) of an
// Ingress rather than its locations, as ingress-nginx does: server-alias,
// ssl-ciphers and ssl-prefer-server-ciphers. It returns features.Server;
// the annotations stage puts it on the servers of the Ingress's hosts.
package server

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeyServerAlias            = "server-alias"
	KeySSLCiphers             = "ssl-ciphers"
	KeySSLPreferServerCiphers = "ssl-prefer-server-ciphers"
)

// Plugin is the server plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "server",
		Doc:  "Settings of the server (host) an Ingress is on: other names it answers to, and its TLS ciphers. The oldest Ingress of a host that sets one decides it, as in ingress-nginx.",
		Annotations: []plugins.Annotation{
			{Key: KeyServerAlias, Pattern: `[-.a-zA-Z0-9*, ]*`, Scope: plugins.ScopeIngress, Risk: plugins.RiskHigh,
				Doc: "Comma-separated host names (or *.wildcards) the server also answers to; a name another server already has is left out with a warning."},
			{Key: KeySSLCiphers, Pattern: `[A-Za-z0-9!:+@._-]{1,1000}`, Scope: plugins.ScopeIngress, Risk: plugins.RiskLow,
				Doc: "OpenSSL cipher list of the server, in place of the ConfigMap's ssl-ciphers.", Default: "ConfigMap ssl-ciphers"},
			{Key: KeySSLPreferServerCiphers, Pattern: `1|t|T|TRUE|true|True|0|f|F|FALSE|false|False`, Scope: plugins.ScopeIngress, Risk: plugins.RiskLow,
				Doc: "Whether the server's cipher order wins over the client's.", Default: "true"},
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	s, errs := Parse(in.Annotations)
	return plugins.Features{Server: s}, errs
}

// Parse turns the annotations into the Server group (nil when none is set).
func Parse(a map[string]string) (*features.Server, []plugins.Error) {
	s := &features.Server{}
	var errs []plugins.Error
	if v, ok := a[KeyServerAlias]; ok {
		aliases, err := parseAliases(v)
		if err != nil {
			errs = append(errs, plugins.Error{Key: KeyServerAlias, Message: err.Error()})
		}
		s.Aliases = aliases
	}
	if v, ok := a[KeySSLCiphers]; ok {
		s.SSLCiphers = v
	}
	if v, ok := a[KeySSLPreferServerCiphers]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Error{Key: KeySSLPreferServerCiphers, Message: "not a boolean"})
		} else {
			s.SSLPreferServerCiphers = &b
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if s.Aliases == nil && s.SSLCiphers == "" && s.SSLPreferServerCiphers == nil {
		return nil, nil
	}
	return s, nil
}

// parseAliases reads a comma-separated list of host names; names are
// lower-cased (host names are case-insensitive) and deduplicated. One bad
// name refuses the whole list.
func parseAliases(v string) ([]string, error) {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		name := strings.ToLower(strings.TrimSpace(item))
		if name == "" {
			continue
		}
		if len(name) > 253 || !features.AliasPattern.MatchString(name) {
			return nil, fmt.Errorf("%q is not a host name (or *.wildcard)", clip(name))
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	if len(out) > features.MaxServerAliases {
		return nil, fmt.Errorf("%d names, at most %d", len(out), features.MaxServerAliases)
	}
	return out, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
