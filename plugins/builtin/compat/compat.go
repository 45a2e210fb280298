// Package compat is the compatibility guard: it owns the ingress-nginx
// annotations that no Switchyard plugin implements yet but that must never
// be silently ignored, because they would ask for access control or
// because their values were injection vectors in ingress-nginx
// (mirror-target and mirror-host, CVE-2025-1098).
//
// Owning them means the host checks every value against the whole-string
// pattern ingress-nginx validates it with, and the risk level ingress-nginx
// gives it, before anything else happens. Then:
//   - an access-control annotation rejects the Ingress: serving it without
//     the access control it asks for would open it to everyone;
//   - any other one is a warning: the Ingress is served, and its Event says
//     the annotation is ignored.
//
// Nothing of these values is ever rendered: the plugin returns no features.
// When a plugin implements one of these keys for real, remove it here (the
// host refuses two plugins owning one key).
package compat

import (
	"context"
	"maps"
	"regexp"
	"slices"

	"switchyard.dev/switchyard/plugins"
)

// kind says what the guard does with a valid value.
type kind int

const (
	// accessControl rejects the Ingress: it asks for a restriction
	// Switchyard does not enforce yet.
	accessControl kind = iota + 1
	// ignored serves the Ingress with a warning.
	ignored
)

// spec is one guarded annotation.
type spec struct {
	key     string
	aliases []string
	// pattern is ingress-nginx's validator as a whole-string pattern; where
	// that validator admits characters NGINX gives a meaning to ("{", "}",
	// "\", quotes) it is narrowed, and the narrowing is said next to it.
	pattern string
	risk    plugins.Risk
	kind    kind
	// check is what a pattern cannot say (a CIDR's bits, a regexp that
	// compiles); nil when the pattern is the whole check.
	check func(string) error
	doc   string
}

// Character classes of ingress-nginx's parser/validators.go.
const (
	// hostChars is a host name with an optional port, for the annotations
	// ingress-nginx checks with ValidateServerName (IsValidRegex). That
	// validator also admits regexp characters, "{", "}" and "\", which make
	// no sense in a host name and were the material of CVE-2025-1098, so
	// they are refused here.
	hostChars = `[-._~a-zA-Z0-9:]*`
)

var specs = []spec{
	{
		// URLWithNginxVariableRegex: ingress-nginx documents
		// "https://test.env.com/$request_uri", so "$" is admitted; the value
		// is never rendered by Switchyard.
		key: "mirror-target", pattern: `[-._~a-zA-Z0-9/:?&=$]*`, risk: plugins.RiskHigh, kind: ignored,
		doc: "URL requests are mirrored to. Ignored by Switchyard for now (warning).",
	},
	{
		key: "mirror-host", pattern: hostChars, risk: plugins.RiskHigh, kind: ignored,
		doc: "Host header of mirrored requests. Ignored by Switchyard for now (warning).",
	},
	{
		key: "mirror-request-body", pattern: plugins.BoolPattern, risk: plugins.RiskLow, kind: ignored,
		doc: "Whether mirrored requests carry the body. Ignored by Switchyard for now (warning).",
	},
}

// byKey indexes specs by key, with each pattern compiled as the host
// compiles it, so Check answers exactly what the host would.
var byKey = func() map[string]*compiled {
	m := map[string]*compiled{}
	for i := range specs {
		m[specs[i].key] = &compiled{spec: &specs[i], re: regexp.MustCompile(`^(?:` + specs[i].pattern + `)$`)}
	}
	return m
}()

type compiled struct {
	spec *spec
	re   *regexp.Regexp
}

// Keys returns the guarded keys (without aliases), sorted.
func Keys() []string { return slices.Sorted(maps.Keys(byKey)) }

// Plugin is the compatibility guard.
type Plugin struct{}

// New returns the guard.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

func (Plugin) Describe() plugins.Description {
	d := plugins.Description{
		Name: "compat",
		Doc: "Compatibility guard: ingress-nginx annotations Switchyard does not implement yet. " +
			"Values are validated as ingress-nginx validates them; access control that is not enforced yet rejects the Ingress, the rest is ignored with a warning.",
	}
	for _, s := range specs {
		d.Annotations = append(d.Annotations, plugins.Annotation{
			Key: s.key, Aliases: s.aliases, Pattern: s.pattern, Risk: s.risk,
			Scope: plugins.ScopeLocation, Doc: s.doc,
		})
	}
	return d
}

func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	var errs []plugins.Error
	for _, key := range slices.Sorted(maps.Keys(in.Annotations)) {
		if e, ok := Check(key, in.Annotations[key]); ok {
			errs = append(errs, e)
		}
	}
	return plugins.Features{}, errs
}

// Check judges one annotation value and returns the Error to report, if
// any. An empty value is no annotation, as in ingress-nginx (which does
// not validate empty values and treats them as absent).
func Check(key, value string) (plugins.Error, bool) {
	c, ok := byKey[key]
	if !ok {
		return plugins.Errorf(key, "not an annotation of the compat plugin"), true
	}
	if value == "" {
		return plugins.Error{}, false
	}
	// The host checked the pattern already; checking again keeps the
	// plugin safe when called another way (tests, fuzzing, a future host).
	if !c.re.MatchString(value) {
		return plugins.Errorf(key, "the value does not match %s", c.spec.pattern), true
	}
	if c.spec.check != nil {
		if err := c.spec.check(value); err != nil {
			return plugins.Errorf(key, "%v", err), true
		}
	}
	if c.spec.kind == accessControl {
		return plugins.Errorf(key, "access control by this annotation is not supported by Switchyard yet; "+
			"the Ingress is not served rather than served without it"), true
	}
	return plugins.Error{Key: key, Warning: true,
		Message: "not supported by Switchyard yet; the annotation is ignored and the Ingress served without it"}, true
}
