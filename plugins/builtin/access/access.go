// Package access owns the source-range annotations of ingress-nginx,
// allowlist-source-range (whitelist-source-range) and
// denylist-source-range, and satisfy, which says whether a request must
// pass all of a location's access checks (the default) or any one.
package access

import (
	"context"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeyAllow   = "allowlist-source-range"
	KeyDeny    = "denylist-source-range"
	KeySatisfy = "satisfy"
)

// cidrChars is what a list may hold; features.ParseCIDRList checks each
// item and the length.
const cidrChars = `[0-9A-Fa-f.:/, ]+`

// Plugin is the access plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	allow := plugins.LocationAnnotation(KeyAllow, cidrChars, plugins.RiskMedium, "",
		"Comma-separated client addresses and CIDRs allowed to reach the Ingress; every other client gets 403. Checked against the client address after real_ip (use-forwarded-headers, use-proxy-protocol).")
	allow.Aliases = []string{"whitelist-source-range"}
	return plugins.Description{
		Name: "access",
		Doc:  "Which client addresses may reach an Ingress.",
		Annotations: []plugins.Annotation{
			allow,
			plugins.LocationAnnotation(KeyDeny, cidrChars, plugins.RiskMedium, "",
				"Comma-separated client addresses and CIDRs that get 403; checked before allowlist-source-range."),
			plugins.LocationAnnotation(KeySatisfy, ` *(any|all) *`, plugins.RiskLow, "all",
				"all: a request must pass every access check of the location (source ranges, basic or external auth); any: one is enough, e.g. an allowed address needs no password."),
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	a, errs := Parse(in.Annotations)
	return plugins.Features{Access: a}, errs
}

// Parse reads the two lists. An unreadable list rejects the Ingress: an
// access control that cannot be enforced is not served without it.
func Parse(a map[string]string) (*features.Access, []plugins.Error) {
	out := &features.Access{}
	var errs []plugins.Error
	for _, k := range []struct {
		key string
		dst *[]string
	}{{KeyAllow, &out.Allow}, {KeyDeny, &out.Deny}} {
		v, ok := a[k.key]
		if !ok {
			continue
		}
		if strings.TrimSpace(v) == "" {
			errs = append(errs, plugins.Errorf(k.key, "is empty; it would allow or deny nothing, and the Ingress is not served rather than served open"))
			continue
		}
		cidrs, notes, err := features.ParseCIDRList(v)
		if err != nil {
			errs = append(errs, plugins.Errorf(k.key, "%v", err))
			continue
		}
		for _, n := range notes {
			errs = append(errs, plugins.Error{Key: k.key, Warning: true, Message: n})
		}
		*k.dst = cidrs
	}
	for _, e := range errs {
		if !e.Warning {
			return nil, errs
		}
	}
	// The host checked the pattern: any or all, maybe with blanks.
	out.SatisfyAny = strings.TrimSpace(a[KeySatisfy]) == "any"
	if len(out.Allow) == 0 && len(out.Deny) == 0 && !out.SatisfyAny {
		return nil, errs
	}
	return out, errs
}
