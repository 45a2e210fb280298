// Package mirror owns ingress-nginx's mirroring annotations: mirror-target,
// mirror-host and mirror-request-body. Each request of the Ingress's
// locations is also sent to mirror-target in the background (NGINX's
// mirror module); the mirror's answer is dropped.
package mirror

import (
	"context"
	"net/url"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeyTarget      = "mirror-target"
	KeyHost        = "mirror-host"
	KeyRequestBody = "mirror-request-body"
)

// Plugin is the mirror plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin. The risks are ingress-nginx's
// (CVE-2025-1098 injected NGINX directives through mirror-target and
// mirror-host); the patterns are narrower than its validators.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "mirror",
		Doc:  "Requests mirrored to a second URL, whose answers are dropped.",
		Annotations: []plugins.Annotation{
			plugins.LocationAnnotation(KeyTarget, features.MirrorTargetSource, plugins.RiskHigh, "",
				`http(s) URL every request is copied to, e.g. "https://test.example.com$request_uri"; the host is literal, and $request_uri, $uri or a path may follow it.`),
			plugins.LocationAnnotation(KeyHost, `[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?`, plugins.RiskHigh, "the target's host",
				"Host header of the mirrored requests."),
			plugins.LocationAnnotation(KeyRequestBody, `on|off`, plugins.RiskLow, "on",
				"off: mirror without the request body."),
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	m, errs := Parse(in.Annotations)
	return plugins.Features{Mirror: m}, errs
}

// Parse reads the annotations; nil without mirror-target.
func Parse(a map[string]string) (*features.Mirror, []plugins.Error) {
	target, ok := a[KeyTarget]
	if !ok || target == "" {
		var errs []plugins.Error
		for _, key := range []string{KeyHost, KeyRequestBody} {
			if _, set := a[key]; set {
				errs = append(errs, plugins.Error{Key: key, Warning: true, Message: "has no effect without " + KeyTarget})
			}
		}
		return nil, errs
	}
	if len(target) > 2048 || !features.MirrorTargetPattern.MatchString(target) {
		return nil, []plugins.Error{plugins.Errorf(KeyTarget, "is not an http(s) URL with a literal host")}
	}
	m := &features.Mirror{Target: target, Host: a[KeyHost], NoBody: a[KeyRequestBody] == "off"}
	if m.Host == "" {
		// As ingress-nginx: the host of the part before any variable.
		u, err := url.Parse(strings.SplitN(target, "$", 2)[0])
		if err != nil || u.Host == "" {
			return nil, []plugins.Error{plugins.Errorf(KeyTarget, "has no host")}
		}
		m.Host = u.Hostname()
	}
	if err := (&features.Features{Mirror: m}).Validate(); err != nil {
		return nil, []plugins.Error{plugins.Errorf(KeyHost, "%v", err)}
	}
	return m, nil
}
