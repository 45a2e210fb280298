// Package authtls owns ingress-nginx's client-certificate annotations
// (auth-tls-*): mutual TLS for the hosts of an Ingress.
//
// As in ingress-nginx it applies per host: every location of a host whose
// Ingress asks for it requires the certificate. Unlike ingress-nginx, what
// cannot be enforced fails closed: a missing Secret or one without a
// usable ca.crt answers 503, and with auth-tls-verify-client on a plain
// HTTP request that is not redirected to HTTPS gets 403 (ingress-nginx
// serves it without a certificate).
package authtls

import (
	"context"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeySecret       = "auth-tls-secret"
	KeyVerifyClient = "auth-tls-verify-client"
	KeyVerifyDepth  = "auth-tls-verify-depth"
	KeyErrorPage    = "auth-tls-error-page"
	KeyPassCert     = "auth-tls-pass-certificate-to-upstream"
	KeyMatchCN      = "auth-tls-match-cn"
)

// Plugin is the authtls plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe implements plugins.Plugin. Patterns and risks are
// ingress-nginx's, narrowed where its validator admits characters NGINX
// gives a meaning to.
func (Plugin) Describe() plugins.Description {
	secret := plugins.Annotation{Key: KeySecret, Scope: plugins.ScopeIngress, Risk: plugins.RiskMedium, SecretRef: true,
		Pattern: plugins.ObjectRefPattern,
		Doc:     "Secret (name or namespace/name, the Ingress's namespace) whose ca.crt client certificates must chain to, and optional ca.crl. Missing or unusable: the Ingress answers 503."}
	ann := func(key, pattern string, risk plugins.Risk, def, doc string) plugins.Annotation {
		return plugins.Annotation{Key: key, Pattern: pattern, Scope: plugins.ScopeIngress, Risk: risk, Default: def, Doc: doc}
	}
	return plugins.Description{
		Name: "authtls",
		Doc:  "Client-certificate authentication (mutual TLS) of an Ingress's hosts; the oldest Ingress of a host that asks for it decides, as in ingress-nginx.",
		Annotations: []plugins.Annotation{
			secret,
			ann(KeyVerifyClient, `on|off|optional|optional_no_ca`, plugins.RiskMedium, "on",
				"on: a certificate signed by the CA is required (400 otherwise, 403 over plain HTTP); optional: checked when sent; optional_no_ca: requested, not checked; off: none. The result goes upstream in ssl-client-verify."),
			ann(KeyVerifyDepth, `[0-9]{1,2}`, plugins.RiskLow, "1", "How deep the client certificate chain is verified (1 to 32)."),
			ann(KeyErrorPage, `((https?://)?[A-Za-z0-9.-]*(:[0-9]+)?/[A-Za-z0-9._/-]*)`, plugins.RiskHigh, "",
				"Where a client whose certificate is missing or fails verification is redirected, in place of NGINX's 400."),
			ann(KeyPassCert, plugins.BoolPattern, plugins.RiskLow, "false",
				"Send the client certificate upstream, URL-encoded PEM, in the ssl-client-cert header."),
			ann(KeyMatchCN, `CN=[-A-Za-z0-9 ._~/*+?|()^\[\],=:@]{1,509}`, plugins.RiskHigh, "",
				`"CN=regex": the client certificate's subject must match it, or the answer is 403.`),
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	c, deny, errs := Parse(in)
	return plugins.Features{ClientAuth: c, Deny: deny}, errs
}

// Parse reads the annotations: nil without auth-tls-secret or with
// verification off; a Deny when the Secret cannot be used.
func Parse(in plugins.Ingress) (*features.ClientAuth, *features.Deny, []plugins.Error) {
	a := in.Annotations
	ref, ok := a[KeySecret]
	if !ok {
		var errs []plugins.Error
		for _, key := range []string{KeyVerifyClient, KeyVerifyDepth, KeyErrorPage, KeyPassCert, KeyMatchCN} {
			if _, set := a[key]; set {
				errs = append(errs, plugins.Error{Key: key, Warning: true, Message: "has no effect without " + KeySecret})
			}
		}
		return nil, nil, errs
	}
	c := &features.ClientAuth{Verify: "on", Depth: 1}
	var errs []plugins.Error
	if v, ok := a[KeyVerifyClient]; ok {
		switch {
		case v == "off":
			return nil, nil, nil
		case !features.ClientVerifyPattern.MatchString(v):
			errs = append(errs, plugins.Errorf(KeyVerifyClient, "%q is not on, off, optional or optional_no_ca", v))
		}
		c.Verify = v
	}
	if v, ok := a[KeyVerifyDepth]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > features.MaxClientVerifyDepth {
			errs = append(errs, plugins.Errorf(KeyVerifyDepth, "%q is not a depth between 1 and %d", v, features.MaxClientVerifyDepth))
		}
		c.Depth = n
	}
	if v, ok := a[KeyErrorPage]; ok && v != "" {
		if len(v) > 1024 || !features.ClientErrorPagePattern.MatchString(v) {
			errs = append(errs, plugins.Errorf(KeyErrorPage, "is not a URL or path"))
		}
		c.ErrorPage = v
	}
	if v, ok := a[KeyPassCert]; ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, plugins.Errorf(KeyPassCert, "is not a boolean"))
		}
		c.PassCertificate = b
	}
	if v, ok := a[KeyMatchCN]; ok {
		if !strings.HasPrefix(v, "CN=") || !features.MatchCNChars.MatchString(v) {
			errs = append(errs, plugins.Errorf(KeyMatchCN, "is not \"CN=\" and a regex of letters, digits and - ._~/*+?|()^[],=:@ and spaces"))
		} else if err := features.ParseSafeRegex(v, features.RegexHeader); err != nil {
			errs = append(errs, plugins.Errorf(KeyMatchCN, "%v", err))
		}
		c.MatchCN = v
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	id, bad := plugins.SecretID(in, KeySecret, ref)
	if bad != nil {
		return nil, nil, []plugins.Error{*bad}
	}
	data, ok := in.Secrets[id]
	if !ok {
		return denied("Secret " + id + " does not exist")
	}
	c.CAPEM, c.CRLPEM = string(data["ca.crt"]), string(data["ca.crl"])
	if c.CAPEM == "" {
		return denied("Secret " + id + " holds no ca.crt")
	}
	// The check names the part that is wrong, never its content.
	if err := (&features.Features{ClientAuth: c}).Validate(); err != nil {
		return denied("Secret " + id + ": " + err.Error())
	}
	return c, nil, nil
}

// denied fails the Ingress closed (503) with a warning naming why.
func denied(why string) (*features.ClientAuth, *features.Deny, []plugins.Error) {
	deny, e := plugins.DenyUnusable(KeySecret, KeySecret+" unusable", why)
	return nil, deny, []plugins.Error{e}
}
