package bus

import "strings"

// RedirectSettings are the controller ConfigMap's HTTPS redirect keys
// next to ssl-redirect: the defaults of the redirect annotations, and the
// paths never redirected.
type RedirectSettings struct {
	// ForceSSLRedirect is force-ssl-redirect: plain HTTP to HTTPS even for
	// hosts without TLS, where an Ingress does not say otherwise.
	ForceSSLRedirect bool `json:"forceSSLRedirect"`
	// PreserveTrailingSlash is preserve-trailing-slash: keep a trailing
	// "/" in the HTTPS redirect.
	PreserveTrailingSlash bool `json:"preserveTrailingSlash"`
	// NoTLSRedirectLocations is no-tls-redirect-locations: location path
	// prefixes never redirected to HTTPS (ACME HTTP-01 challenges).
	NoTLSRedirectLocations []string `json:"noTLSRedirectLocations"`
}

// defaultRedirectSettings are ingress-nginx's defaults.
func defaultRedirectSettings() RedirectSettings {
	return RedirectSettings{NoTLSRedirectLocations: []string{"/.well-known/acme-challenge"}}
}

// NoTLSRedirect says whether a location path is one of
// no-tls-redirect-locations: ingress-nginx compares by prefix.
func (r RedirectSettings) NoTLSRedirect(path string) bool {
	return hasPrefixIn(path, r.NoTLSRedirectLocations)
}

// hasPrefixIn says whether path starts with one of prefixes.
func hasPrefixIn(path string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	return false
}
