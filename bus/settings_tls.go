package bus

import (
	"encoding/base64"
	"errors"
	"fmt"
)

// TLSSettings are the controller ConfigMap keys of TLS termination beyond
// ssl-protocols and ssl-ciphers (Settings), and the status code of the
// redirect to HTTPS.
type TLSSettings struct {
	SSLECDHCurve        string `json:"sslECDHCurve"`        // ssl-ecdh-curve: "auto" or curves separated by ":"
	SSLSessionCache     bool   `json:"sslSessionCache"`     // ssl-session-cache
	SSLSessionCacheSize string `json:"sslSessionCacheSize"` // ssl-session-cache-size, an NGINX size
	SSLSessionTimeout   string `json:"sslSessionTimeout"`   // ssl-session-timeout, an NGINX time
	SSLSessionTickets   bool   `json:"sslSessionTickets"`   // ssl-session-tickets
	SSLBufferSize       string `json:"sslBufferSize"`       // ssl-buffer-size, an NGINX size
	SSLEarlyData        bool   `json:"sslEarlyData"`        // ssl-early-data (TLS 1.3 0-RTT)
	// SSLRejectHandshake is ssl-reject-handshake: a TLS handshake whose
	// SNI name no Ingress serves is refused rather than answered with the
	// default certificate.
	SSLRejectHandshake bool `json:"sslRejectHandshake"`
	// SSLDHParam is ssl-dh-param, "namespace/name" of a Secret whose
	// dhparam.pem holds Diffie-Hellman parameters for the DHE ciphers;
	// SSLDHParamPEM is that PEM once the translator found and checked it
	// ("" while the Secret is missing or invalid: NGINX then offers no
	// DHE cipher, as ingress-nginx does without the key).
	SSLDHParam    string `json:"sslDHParam,omitempty"`
	SSLDHParamPEM string `json:"sslDHParamPEM,omitempty"`
	// SSLSessionTicketKey is ssl-session-ticket-key: the standard base64
	// of the 48 or 80 bytes NGINX encrypts TLS session tickets with
	// (DecodeTicketKey). Every replica given the same key resumes the
	// others' sessions. A secret: never logged or shown. "" lets each
	// NGINX make its own keys, ingress-nginx's default.
	SSLSessionTicketKey string `json:"sslSessionTicketKey,omitempty"`
	// HTTPRedirectCode is http-redirect-code: the status of the redirect
	// to HTTPS (ssl-redirect, force-ssl-redirect): 301, 302, 307 or 308.
	HTTPRedirectCode int `json:"httpRedirectCode"`
	// EnableOCSP is enable-ocsp: the applier fetches an OCSP response for
	// every served certificate that names a responder and NGINX staples
	// it (stages/applier/ocsp.go); never fetched on the request path.
	EnableOCSP bool `json:"enableOCSP,omitempty"`
}

// DecodeTicketKey returns the bytes of an ssl-session-ticket-key value:
// standard base64 (line breaks are skipped, as ingress-nginx's decoder
// does) of exactly 48 or 80 bytes, the two sizes NGINX reads. The error
// never holds the value.
func DecodeTicketKey(value string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(value)
	if err != nil {
		return nil, errors.New("not standard base64")
	}
	if len(key) != 48 && len(key) != 80 {
		return nil, fmt.Errorf("%d bytes, not 48 or 80", len(key))
	}
	return key, nil
}

// defaultTLSSettings are ingress-nginx's defaults.
func defaultTLSSettings() TLSSettings {
	return TLSSettings{
		SSLECDHCurve: "auto", SSLSessionCache: true, SSLSessionCacheSize: "10m", SSLSessionTimeout: "10m",
		SSLBufferSize: "4k", HTTPRedirectCode: 308,
	}
}
