package features

import (
	"crypto/x509"
	"fmt"
	"regexp"
)

// ClientAuth is client-certificate authentication (mutual TLS) of the
// server an Ingress is on: the authtls plugin's group (auth-tls-*). Like
// ingress-nginx, it applies to the whole host: the annotations stage puts
// the oldest Ingress's of the host (in ingress-nginx's order) on the server.
type ClientAuth struct {
	// CAPEM are the CA certificates a client certificate must chain to
	// (the Secret's ca.crt); CRLPEM its optional revocation lists (ca.crl).
	// Secret data: never logged.
	CAPEM  string `json:"caPEM"`
	CRLPEM string `json:"crlPEM,omitempty"`
	// Verify is ssl_verify_client: on, optional or optional_no_ca.
	Verify string `json:"verify"`
	// Depth is ssl_verify_depth.
	Depth int `json:"depth"`
	// ErrorPage is where a client whose certificate is missing or fails
	// goes instead of NGINX's 400 (auth-tls-error-page), "" for none.
	ErrorPage string `json:"errorPage,omitempty"`
	// PassCertificate sends the client certificate upstream
	// (ssl-client-cert, URL-encoded PEM).
	PassCertificate bool `json:"passCertificate,omitempty"`
	// MatchCN is the regex the client's subject DN must match, as
	// auth-tls-match-cn gives it ("CN=..."), "" for any.
	MatchCN string `json:"matchCN,omitempty"`
}

var (
	// ClientVerifyPattern: the values of ssl_verify_client that verify.
	ClientVerifyPattern = regexp.MustCompile(`^(on|optional|optional_no_ca)$`)
	// ClientErrorPagePattern is ingress-nginx's pattern for
	// auth-tls-error-page: a URL or path without quotes, "$" or blanks.
	ClientErrorPagePattern = regexp.MustCompile(`^(https?://)?[A-Za-z0-9.-]*(:[0-9]+)?/[A-Za-z0-9._/-]*$`)
	// MatchCNChars are what auth-tls-match-cn's regex may hold: nothing
	// that can end a quoted NGINX string, start a variable or escape.
	MatchCNChars = regexp.MustCompile(`^[-A-Za-z0-9 ._~/*+?|()^\[\],=:@]{1,512}$`)
)

// MaxClientVerifyDepth bounds auth-tls-verify-depth.
const MaxClientVerifyDepth = 32

func (c *ClientAuth) validate() error {
	if c == nil {
		return nil
	}
	if !certificatesOnly(c.CAPEM) {
		return fmt.Errorf("the CA is not a list of PEM certificates")
	}
	if c.CRLPEM != "" && !crlsOnly(c.CRLPEM) {
		return fmt.Errorf("the CRL is not a list of PEM revocation lists")
	}
	if !ClientVerifyPattern.MatchString(c.Verify) {
		return fmt.Errorf("verify %q is not on, optional or optional_no_ca", c.Verify)
	}
	if c.Depth < 1 || c.Depth > MaxClientVerifyDepth {
		return fmt.Errorf("depth %d is not between 1 and %d", c.Depth, MaxClientVerifyDepth)
	}
	if c.ErrorPage != "" && (len(c.ErrorPage) > 1024 || !ClientErrorPagePattern.MatchString(c.ErrorPage)) {
		return fmt.Errorf("error page %q is not a URL or path", c.ErrorPage)
	}
	if c.MatchCN != "" {
		if !MatchCNChars.MatchString(c.MatchCN) {
			return fmt.Errorf("match-cn %q holds a character that is not allowed", c.MatchCN)
		}
		if err := ParseSafeRegex(c.MatchCN, RegexHeader); err != nil {
			return fmt.Errorf("match-cn %q: %w", c.MatchCN, err)
		}
	}
	return nil
}

// crlsOnly says data is one or more PEM certificate revocation lists.
func crlsOnly(data string) bool {
	return pemOnly(data, "X509 CRL", func(der []byte) error {
		_, err := x509.ParseRevocationList(der)
		return err
	})
}
