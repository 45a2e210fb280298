package renderer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"time"

	"switchyard.dev/switchyard/bus"
)

// ssl-session-ticket-key: every replica given the same key must resume the
// TLS sessions another issued. The key alone does that for TLS 1.2. A
// TLS 1.3 session is also bound to the server's session ID context, which
// NGINX hashes from the certificates its configuration loads: the
// http block's placeholder certificate, which each applier generates for
// itself (certificate.lua serves the real ones). So while the key is set,
// the placeholder is one every replica derives alike from the key, and
// the contexts match.

// TicketKeyFile is the path of the ssl-session-ticket-key file: its
// bytes, which only the NGINX master reads (internal/nginx keeps a .key
// file to its owner).
const TicketKeyFile = secretDir + "ssl-session-ticket.key"

// SessionContextCertFile and SessionContextKeyFile are the placeholder
// certificate derived from the ticket key, which nginx.conf loads instead
// of the applier's own while the key is set.
const (
	SessionContextCertFile = secretDir + "ssl-session-context.crt"
	SessionContextKeyFile  = secretDir + "ssl-session-context.key.pem"
)

// ticketKey is the ssl-session-ticket-key's bytes, or nil for none. The
// translator checked the value; one from elsewhere that does not decode
// is left out rather than written into a file NGINX would refuse.
func ticketKey(s bus.Settings) []byte {
	if s.SSLSessionTicketKey == "" {
		return nil
	}
	key, err := bus.DecodeTicketKey(s.SSLSessionTicketKey)
	if err != nil {
		return nil
	}
	return key
}

// placeholderCertificate is the http block's ssl_certificate and
// ssl_certificate_key: the applier's generated pair, or the one derived
// from the ticket key.
func placeholderCertificate(s bus.Settings) (cert, key string) {
	if ticketKey(s) != nil {
		return SessionContextCertFile, SessionContextKeyFile
	}
	return "../ssl/default.crt", "../ssl/default.key"
}

// sessionContextCache keeps the last derived pair: nginx.conf is rendered
// again on many changes, the key rarely changes.
type sessionContextCache struct {
	key           string
	cert, privPEM string
}

// certificate returns the PEM certificate and key derived from ticketKey.
func (c *sessionContextCache) certificate(ticketKey []byte) (cert, key string) {
	if c.key != string(ticketKey) || c.cert == "" {
		certPEM, keyPEM, err := deriveSessionContextCertificate(ticketKey)
		if err != nil {
			// Only a broken crypto library gets here: P-256 takes any
			// scalar HKDF gives below the order, tried in turn.
			panic(fmt.Sprintf("renderer: deriving the session context certificate: %v", err))
		}
		c.key, c.cert, c.privPEM = string(ticketKey), string(certPEM), string(keyPEM)
	}
	return c.cert, c.privPEM
}

// sessionContextValidity is the derived certificate's validity: fixed, so
// that every replica derives the same bytes. Nothing trusts it (it is
// self-signed, like the applier's own); it is sent only for a name no
// certificate matches.
var sessionContextValidity = [2]time.Time{
	time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2126, 1, 1, 0, 0, 0, 0, time.UTC),
}

// deriveSessionContextCertificate makes a self-signed P-256 certificate
// whose key, and so whose bytes, follow from ticketKey alone: the private
// scalar comes from HKDF-SHA256 and the signature is RFC 6979's
// deterministic one.
func deriveSessionContextCertificate(ticketKey []byte) (certPEM, keyPEM []byte, err error) {
	var priv *ecdsa.PrivateKey
	for i := 0; priv == nil; i++ {
		if i == 16 {
			return nil, nil, fmt.Errorf("no P-256 scalar in 16 tries")
		}
		scalar, err := hkdf.Key(sha256.New, ticketKey, nil, fmt.Sprintf("switchyard session context certificate %d", i), 32)
		if err != nil {
			return nil, nil, err
		}
		priv, _ = ecdsa.ParseRawPrivateKey(elliptic.P256(), scalar)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "Switchyard Default Certificate", Organization: []string{"Switchyard"}},
		NotBefore:             sessionContextValidity[0],
		NotAfter:              sessionContextValidity[1],
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(nil, tmpl, tmpl, &priv.PublicKey, deterministicSigner{priv})
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}

// deterministicSigner signs without randomness (RFC 6979), whatever
// reader x509 passes.
type deterministicSigner struct{ key *ecdsa.PrivateKey }

func (s deterministicSigner) Public() crypto.PublicKey { return s.key.Public() }

func (s deterministicSigner) Sign(_ io.Reader, digest []byte, opts crypto.SignerOpts) ([]byte, error) {
	return s.key.Sign(nil, digest, opts)
}
