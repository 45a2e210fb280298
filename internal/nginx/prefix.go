// Package nginx holds the mechanics of one NGINX installation: the prefix
// layout (-p) and its preparation, the control socket's directory, the
// worker user, the configuration directory (write, nginx -t, swap) and the
// master process (start, reload, stop). It decides nothing: when to write,
// test, reload or push is the applier's logic (stages/applier), and the
// applier is its only caller that writes files or runs and signals NGINX
// (the design: the applier alone touches NGINX). Others use it for paths
// only: `run` for the prefix and socket, tests for a prefix of their own
// and nginx -t. The Lua endpoint is not here: only the applier posts to it.
package nginx

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"time"

	"switchyard.dev/switchyard/lua"
)

// The NGINX prefix (-p) layout. nginx.conf refers to these paths relative
// to the prefix or to the configuration directory, so the rendered files
// never name a machine-specific path.
const (
	ConfDir     = "conf" // live configuration: nginx.conf, servers/
	MainFile    = "nginx.conf"
	NextConfDir = "conf.next" // candidate, tested with nginx -t before the swap
	OldConfDir  = "conf.old"
	SSLDir      = "ssl" // default certificate, referenced as ../ssl from conf
	LogsDir     = "logs"
	TmpDir      = "tmp"
)

// PrefixFor is where `run` keeps NGINX below its state directory.
func PrefixFor(stateDir string) string { return filepath.Join(stateDir, "nginx") }

// PreparePrefix creates the prefix layout, installs the Lua modules and
// makes a self-signed default certificate if there is none.
func PreparePrefix(prefix string) error {
	for _, dir := range []string{ConfDir, SSLDir, LogsDir, TmpDir} {
		if err := os.MkdirAll(filepath.Join(prefix, dir), 0o755); err != nil {
			return fmt.Errorf("prepare nginx prefix: %w", err)
		}
	}
	if err := lua.Install(prefix); err != nil {
		return err
	}
	return ensureDefaultCertificate(filepath.Join(prefix, SSLDir))
}

// ensureDefaultCertificate writes the certificate served for unknown SNI
// names, as ingress-nginx's "Kubernetes Ingress Controller Fake Certificate".
func ensureDefaultCertificate(dir string) error {
	certPath, keyPath := filepath.Join(dir, "default.crt"), filepath.Join(dir, "default.key")
	if _, err := os.Stat(certPath); err == nil {
		if _, err := os.Stat(keyPath); err == nil {
			return nil
		}
	}
	certPEM, keyPEM, err := SelfSignedCertificate("Switchyard Default Certificate", nil, time.Now())
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return fmt.Errorf("write default key: %w", err)
	}
	if err := os.WriteFile(certPath, certPEM, 0o644); err != nil {
		return fmt.Errorf("write default certificate: %w", err)
	}
	return nil
}

// SelfSignedCertificate makes a P-256 certificate for the given DNS names,
// valid for ten years from now.
func SelfSignedCertificate(commonName string, dnsNames []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("generate key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, nil, fmt.Errorf("generate serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName, Organization: []string{"Switchyard"}},
		DNSNames:              dnsNames,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.AddDate(10, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("create certificate: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("marshal key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), nil
}
