package features

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"regexp"
	"strings"
)

// Upstream is how a location reaches its backend (plugin upstream): the
// protocol (backend-protocol) and, for HTTPS and GRPCS, the TLS to it
// (proxy-ssl-*).
type Upstream struct {
	// Protocol is HTTPS, GRPC, GRPCS or FCGI; "" is plain HTTP/1.x.
	Protocol string       `json:"protocol,omitempty"`
	TLS      *UpstreamTLS `json:"tls,omitempty"`
	// FastCGIIndex is fastcgi-index: the file appended to a URI ending in
	// "/" (FCGI only).
	FastCGIIndex string `json:"fastcgiIndex,omitempty"`
	// FastCGIParams are the parameters of the ConfigMap
	// fastcgi-params-configmap names (FCGI only), sent next to NGINX's
	// standard ones; the translator reads them.
	FastCGIParams []Header `json:"fastcgiParams,omitempty"`
}

// The backend protocols Switchyard speaks (backend-protocol).
const (
	ProtocolHTTPS = "HTTPS"
	ProtocolGRPC  = "GRPC"
	ProtocolGRPCS = "GRPCS"
	ProtocolFCGI  = "FCGI"
)

// FastCGI parameters: a name as FastCGI applications read them, and a
// value of printable characters where "$" starts an NGINX variable
// ($document_root$fastcgi_script_name) and nothing can end its quotes.
var (
	FastCGIParamNamePattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,127}$`)
	FastCGIParamValuePattern = regexp.MustCompile(`^(?:[A-Za-z0-9 ._~/:=,+@%!*()&?#-]|\$[a-z_][a-z0-9_]{0,63})*$`)
)

// MaxFastCGIParams bounds fastcgi-params-configmap.
const MaxFastCGIParams = 128

// ValidFastCGIParams checks every parameter against the patterns above.
func ValidFastCGIParams(params []Header) error {
	if len(params) > MaxFastCGIParams {
		return fmt.Errorf("%d fastcgi params, at most %d", len(params), MaxFastCGIParams)
	}
	for _, p := range params {
		if !FastCGIParamNamePattern.MatchString(p.Name) {
			return fmt.Errorf("fastcgi param name %q is not letters, digits and _", p.Name)
		}
		if len(p.Value) > 1024 || !FastCGIParamValuePattern.MatchString(p.Value) {
			return fmt.Errorf("fastcgi param %s: the value holds a quote, backslash, brace, \";\" or control character, a \"$\" that starts no variable name, or is over 1024 bytes", p.Name)
		}
	}
	return nil
}

// FastCGIIndexPattern is a file name fastcgi-index may name.
var FastCGIIndexPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,255}$`)

// UpstreamTLS is the TLS a location uses to its backend. Empty fields keep
// NGINX's defaults.
type UpstreamTLS struct {
	// CAPEM verifies the backend's certificate (the proxy-ssl-secret's
	// ca.crt). CertPEM and KeyPEM (tls.crt, tls.key) authenticate the
	// ingress to the backend. Secret data: never logged.
	CAPEM   string `json:"caPEM,omitempty"`
	CertPEM string `json:"certPEM,omitempty"`
	KeyPEM  string `json:"keyPEM,omitempty"`
	// Verify is proxy-ssl-verify; VerifyDepth proxy-ssl-verify-depth (0:
	// NGINX's default).
	Verify      bool `json:"verify,omitempty"`
	VerifyDepth int  `json:"verifyDepth,omitempty"`
	// Ciphers (OpenSSL's format) and Protocols ("TLSv1.2 TLSv1.3").
	Ciphers   string `json:"ciphers,omitempty"`
	Protocols string `json:"protocols,omitempty"`
	// Name is the name verified and sent in SNI (proxy-ssl-name);
	// ServerName turns SNI on (proxy-ssl-server-name).
	Name       string `json:"name,omitempty"`
	ServerName bool   `json:"serverName,omitempty"`
}

// Patterns and bounds of the upstream values.
var (
	UpstreamProtocolsPattern = regexp.MustCompile(`^(SSLv2|SSLv3|TLSv1|TLSv1\.1|TLSv1\.2|TLSv1\.3)( (SSLv2|SSLv3|TLSv1|TLSv1\.1|TLSv1\.2|TLSv1\.3)){0,5}$`)
	// UpstreamCiphersPattern is ingress-nginx's cipher list; its length is
	// checked apart (Go caps repeat counts at 1000).
	UpstreamCiphersPattern = regexp.MustCompile(`^[A-Za-z0-9+:_!-]+$`)
)

// MaxVerifyDepth bounds proxy-ssl-verify-depth: chains are short.
const MaxVerifyDepth = 100

func (u *Upstream) validate() error {
	if u == nil {
		return nil
	}
	switch u.Protocol {
	case "", ProtocolHTTPS, ProtocolGRPC, ProtocolGRPCS, ProtocolFCGI:
	default:
		return fmt.Errorf("protocol %q is not HTTPS, GRPC, GRPCS or FCGI", u.Protocol)
	}
	if u.FastCGIIndex != "" && (u.Protocol != ProtocolFCGI || !FastCGIIndexPattern.MatchString(u.FastCGIIndex)) {
		return fmt.Errorf("fastcgi index %q is not a file name of an FCGI backend", u.FastCGIIndex)
	}
	if len(u.FastCGIParams) > 0 && u.Protocol != ProtocolFCGI {
		return fmt.Errorf("fastcgi params for a backend that is not FCGI")
	}
	if err := ValidFastCGIParams(u.FastCGIParams); err != nil {
		return err
	}
	return u.TLS.validate()
}

func (t *UpstreamTLS) validate() error {
	if t == nil {
		return nil
	}
	if t.Protocols != "" && !UpstreamProtocolsPattern.MatchString(t.Protocols) {
		return fmt.Errorf("protocols %q are not TLS protocol names", t.Protocols)
	}
	if t.Ciphers != "" && (len(t.Ciphers) > 1024 || !UpstreamCiphersPattern.MatchString(t.Ciphers)) {
		return fmt.Errorf("ciphers hold a character OpenSSL's cipher lists do not")
	}
	if t.Name != "" && (len(t.Name) > 253 || !AliasPattern.MatchString(t.Name) || strings.HasPrefix(t.Name, "*")) {
		return fmt.Errorf("name %q is not a host name", t.Name)
	}
	if t.VerifyDepth < 0 || t.VerifyDepth > MaxVerifyDepth {
		return fmt.Errorf("verify depth %d is not from 0 to %d", t.VerifyDepth, MaxVerifyDepth)
	}
	if t.Verify && t.CAPEM == "" {
		return fmt.Errorf("verify is on without a CA to verify with")
	}
	if (t.CertPEM == "") != (t.KeyPEM == "") {
		return fmt.Errorf("a client certificate needs both its certificate and its key")
	}
	for name, data := range map[string]string{"CA": t.CAPEM, "certificate": t.CertPEM} {
		if data != "" && !certificatesOnly(data) {
			return fmt.Errorf("the %s is not a list of PEM certificates", name)
		}
	}
	if t.KeyPEM != "" {
		if block, rest := pem.Decode([]byte(t.KeyPEM)); block == nil || !strings.HasSuffix(block.Type, "PRIVATE KEY") || strings.TrimSpace(string(rest)) != "" {
			return fmt.Errorf("the key is not one PEM private key")
		}
	}
	return nil
}

// certificatesOnly says data is one or more PEM certificates and nothing
// else: what is written into a file NGINX reads as certificates.
func certificatesOnly(data string) bool {
	return pemOnly(data, "CERTIFICATE", func(der []byte) error {
		_, err := x509.ParseCertificate(der)
		return err
	})
}

// pemOnly says data is one or more PEM blocks of type typ, each of which
// parse accepts, and nothing else.
func pemOnly(data, typ string, parse func(der []byte) error) bool {
	rest := []byte(data)
	n := 0
	for {
		block, next := pem.Decode(rest)
		if block == nil {
			return n > 0 && strings.TrimSpace(string(rest)) == ""
		}
		if block.Type != typ || parse(block.Bytes) != nil {
			return false
		}
		rest, n = next, n+1
	}
}
