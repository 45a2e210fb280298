// Package upstream owns how a location reaches its backend:
// backend-protocol (HTTP, HTTPS, GRPC, GRPCS) and the proxy-ssl-*
// annotations for the TLS to an HTTPS or GRPCS backend.
package upstream

import (
	"context"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotations this plugin owns.
const (
	KeyBackendProtocol = "backend-protocol"
	KeySecret          = "proxy-ssl-secret"
	KeyVerify          = "proxy-ssl-verify"
	KeyVerifyDepth     = "proxy-ssl-verify-depth"
	KeyCiphers         = "proxy-ssl-ciphers"
	KeyProtocols       = "proxy-ssl-protocols"
	KeyName            = "proxy-ssl-name"
	KeyServerName      = "proxy-ssl-server-name"
	KeyFastCGIIndex    = "fastcgi-index"
	KeyFastCGIParams   = "fastcgi-params-configmap"
)

const (
	// protocolPattern is ingress-nginx's list, any case (it upper-cases).
	protocolPattern = `(?i:HTTP|HTTPS|AUTO_HTTP|GRPC|GRPCS|FCGI|AJP)`
	onOffPattern    = `on|off`
	secretPattern   = plugins.ObjectRefPattern
	hostPattern     = `[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?)*`
	protocolsChars  = `[A-Za-z0-9. ]{1,100}`
	ciphersChars    = `[A-Za-z0-9+:_!-]{1,1000}`
	depthChars      = `[0-9]{1,3}`
	indexChars      = `[A-Za-z0-9._-]{1,255}`
)

// Plugin is the upstream plugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

var ann = plugins.LocationAnnotation

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	secret := ann(KeySecret, secretPattern, plugins.RiskMedium, "",
		"Secret (name or namespace/name, the Ingress's namespace) with ca.crt to verify an HTTPS or GRPCS backend, and tls.crt/tls.key to authenticate to it. Missing or unusable: the Ingress answers 503.")
	secret.SecretRef = true
	return plugins.Description{
		Name: "upstream",
		Doc:  "The protocol spoken to the backend, and the TLS to an HTTPS or GRPCS backend.",
		Annotations: []plugins.Annotation{
			ann(KeyBackendProtocol, protocolPattern, plugins.RiskLow, "HTTP",
				"HTTP, HTTPS (TLS to the backend), GRPC (HTTP/2 cleartext), GRPCS (gRPC over TLS) or FCGI (FastCGI); AUTO_HTTP is HTTP; AJP is refused. Clients reach a gRPC location over HTTPS (HTTP/2)."),
			ann(KeyFastCGIIndex, indexChars, plugins.RiskMedium, "", "With backend-protocol FCGI: the file name appended to a URI that ends in / (fastcgi_index), e.g. index.php."),
			ann(KeyFastCGIParams, plugins.ObjectRefPattern, plugins.RiskMedium, "",
				"With backend-protocol FCGI: a ConfigMap of the Ingress's namespace whose data are FastCGI parameters sent next to the standard ones; values may hold NGINX variables ($document_root). A missing ConfigMap or a bad parameter rejects the Ingress."),
			secret,
			ann(KeyVerify, onOffPattern, plugins.RiskLow, "off", "on: verify the backend's certificate against proxy-ssl-secret's ca.crt (a secret without one: 503)."),
			ann(KeyVerifyDepth, depthChars, plugins.RiskLow, "1", "Depth of the backend's chain verified, 1 to 100."),
			ann(KeyCiphers, ciphersChars, plugins.RiskMedium, "DEFAULT", "Ciphers offered to the backend, in OpenSSL's format."),
			ann(KeyProtocols, protocolsChars, plugins.RiskLow, "TLSv1.2 TLSv1.3", "TLS protocols offered to the backend, separated by spaces."),
			ann(KeyName, hostPattern, plugins.RiskHigh, "", "Name verified in the backend's certificate and sent in SNI (with proxy-ssl-server-name on); default: the backend's address."),
			ann(KeyServerName, onOffPattern, plugins.RiskLow, "off", "on: send the name in SNI to the backend."),
		},
	}
}

// ApplyIngress implements plugins.PerIngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	u, deny, errs := Parse(in)
	return plugins.Features{Upstream: u, Deny: deny}, errs
}

// Parse turns the annotations into the Upstream group: nil when the
// backend is plain HTTP with nothing set; a Deny when TLS that was asked
// for cannot be set up (a missing Secret, verify without a CA).
func Parse(in plugins.Ingress) (*features.Upstream, *features.Deny, []plugins.Error) {
	a := in.Annotations
	u := &features.Upstream{}
	var errs []plugins.Error
	if v, ok := a[KeyBackendProtocol]; ok {
		switch p := strings.ToUpper(v); p {
		case "HTTP", "AUTO_HTTP":
		case features.ProtocolHTTPS, features.ProtocolGRPC, features.ProtocolGRPCS, features.ProtocolFCGI:
			u.Protocol = p
		default:
			errs = append(errs, plugins.Errorf(KeyBackendProtocol, "%s is not supported by Switchyard (HTTP, HTTPS, GRPC, GRPCS and FCGI are)", p))
		}
	}
	if _, ok := a[KeyFastCGIParams]; ok && u.Protocol != features.ProtocolFCGI {
		// The translator reads the ConfigMap; only an FCGI backend uses it.
		errs = append(errs, plugins.Error{Key: KeyFastCGIParams, Warning: true, Message: "applies to backend-protocol FCGI only; ignored"})
	}
	if v, ok := a[KeyFastCGIIndex]; ok {
		switch {
		case u.Protocol != features.ProtocolFCGI:
			errs = append(errs, plugins.Error{Key: KeyFastCGIIndex, Warning: true, Message: "applies to backend-protocol FCGI only; ignored"})
		case !features.FastCGIIndexPattern.MatchString(v):
			errs = append(errs, plugins.Errorf(KeyFastCGIIndex, "%q is not a file name", v))
		default:
			u.FastCGIIndex = v
		}
	}
	t, deny, tlsErrs := parseTLS(in)
	errs = append(errs, tlsErrs...)
	for _, e := range errs {
		if !e.Warning {
			return nil, nil, errs
		}
	}
	if deny != nil {
		return nil, deny, errs
	}
	u.TLS = t
	if u.Protocol == "" && u.TLS == nil {
		return nil, nil, errs
	}
	return u, nil, errs
}

// parseTLS reads the proxy-ssl-* annotations. Unlike ingress-nginx, which
// ignored every other proxy-ssl-* annotation without proxy-ssl-secret, each
// applies on its own (users set proxy-ssl-server-name and proxy-ssl-name
// for backends behind SNI routing, and saw them silently dropped).
func parseTLS(in plugins.Ingress) (*features.UpstreamTLS, *features.Deny, []plugins.Error) {
	a := in.Annotations
	t := &features.UpstreamTLS{Ciphers: a[KeyCiphers], Name: strings.ToLower(a[KeyName])}
	var errs []plugins.Error
	if v, ok := a[KeyProtocols]; ok {
		fields := strings.Fields(v)
		t.Protocols = strings.Join(fields, " ")
		if !features.UpstreamProtocolsPattern.MatchString(t.Protocols) {
			errs = append(errs, plugins.Errorf(KeyProtocols, "%q is not a list of SSLv2, SSLv3, TLSv1, TLSv1.1, TLSv1.2, TLSv1.3", v))
		}
	}
	if v, ok := a[KeyCiphers]; ok && (len(v) > 1024 || !features.UpstreamCiphersPattern.MatchString(v)) {
		errs = append(errs, plugins.Errorf(KeyCiphers, "is not an OpenSSL cipher list (letters, digits and + : _ ! -)"))
	}
	if _, ok := a[KeyName]; ok && (len(t.Name) > 253 || !features.AliasPattern.MatchString(t.Name) || strings.HasPrefix(t.Name, "*")) {
		errs = append(errs, plugins.Errorf(KeyName, "%q is not a host name", a[KeyName]))
	}
	t.Verify = a[KeyVerify] == "on"
	t.ServerName = a[KeyServerName] == "on"
	if v, ok := a[KeyVerifyDepth]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > features.MaxVerifyDepth {
			errs = append(errs, plugins.Errorf(KeyVerifyDepth, "%q is not a whole number from 1 to %d", v, features.MaxVerifyDepth))
		}
		t.VerifyDepth = n
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	if ref, ok := a[KeySecret]; ok {
		if deny, e := readSecret(in, ref, t); deny != nil || e != nil {
			return nil, deny, e
		}
	}
	var warnings []plugins.Error
	if t.Verify && t.Name == "" {
		// NGINX would check the name of the upstream block, which no
		// backend certificate carries: every request would get 502.
		warnings = append(warnings, plugins.Error{Key: KeyVerify, Warning: true,
			Message: "proxy-ssl-verify is on without proxy-ssl-name: the backend's certificate is checked for the name upstream_balancer_tls and every request will fail (502); set proxy-ssl-name to the name in the backend's certificate"})
	}
	if t.Verify && t.CAPEM == "" {
		deny, errs := denied(KeyVerify, "proxy-ssl-verify is on, but no proxy-ssl-secret with a ca.crt gives a CA to verify with")
		return nil, deny, errs
	}
	if *t == (features.UpstreamTLS{}) {
		return nil, nil, warnings
	}
	return t, nil, warnings
}

// readSecret fills t from the Secret ref names; a Secret that cannot be
// used denies the Ingress rather than proxying without the TLS asked for.
func readSecret(in plugins.Ingress, ref string, t *features.UpstreamTLS) (*features.Deny, []plugins.Error) {
	id, bad := plugins.SecretID(in, KeySecret, ref)
	if bad != nil {
		return nil, []plugins.Error{*bad}
	}
	data, ok := in.Secrets[id]
	if !ok {
		return denied(KeySecret, "Secret "+id+" does not exist")
	}
	t.CAPEM, t.CertPEM, t.KeyPEM = string(data["ca.crt"]), string(data["tls.crt"]), string(data["tls.key"])
	if t.CAPEM == "" && t.CertPEM == "" {
		return denied(KeySecret, "Secret "+id+" holds neither ca.crt nor tls.crt")
	}
	// The checks name the part that is wrong, never its content.
	if err := (&features.Features{Upstream: &features.Upstream{TLS: &features.UpstreamTLS{CAPEM: t.CAPEM, CertPEM: t.CertPEM, KeyPEM: t.KeyPEM}}}).Validate(); err != nil {
		return denied(KeySecret, "Secret "+id+": "+err.Error())
	}
	return nil, nil
}

// denied fails the Ingress closed (503) with a warning naming why.
func denied(key, why string) (*features.Deny, []plugins.Error) {
	deny, e := plugins.DenyUnusable(key, key+" unusable", why)
	return deny, []plugins.Error{e}
}
