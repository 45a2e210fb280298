package bus

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
	// HTTPRedirectCode is http-redirect-code: the status of the redirect
	// to HTTPS (ssl-redirect, force-ssl-redirect): 301, 302, 307 or 308.
	HTTPRedirectCode int `json:"httpRedirectCode"`
	// EnableOCSP is enable-ocsp: the applier fetches an OCSP response for
	// every served certificate that names a responder and NGINX staples
	// it (stages/applier/ocsp.go); never fetched on the request path.
	EnableOCSP bool `json:"enableOCSP,omitempty"`
}

// defaultTLSSettings are ingress-nginx's defaults.
func defaultTLSSettings() TLSSettings {
	return TLSSettings{
		SSLECDHCurve: "auto", SSLSessionCache: true, SSLSessionCacheSize: "10m", SSLSessionTimeout: "10m",
		SSLBufferSize: "4k", HTTPRedirectCode: 308,
	}
}
