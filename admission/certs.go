package admission

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// certReloader serves the webhook certificate from files and reads them
// again when they change, so a rotated Secret needs no restart.
type certReloader struct {
	certFile, keyFile string
	mu                sync.Mutex
	cert              *tls.Certificate
	modTime           time.Time
	checked           time.Time
}

func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	if certFile == "" || keyFile == "" {
		return nil, fmt.Errorf("--validating-webhook needs --validating-webhook-certificate and --validating-webhook-key")
	}
	r := &certReloader{certFile: certFile, keyFile: keyFile}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *certReloader) load() error {
	info, err := os.Stat(r.certFile)
	if err != nil {
		return fmt.Errorf("webhook certificate: %w", err)
	}
	// The error of LoadX509KeyPair names no key material.
	cert, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("webhook certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	r.cert, r.modTime = &cert, info.ModTime()
	return nil
}

// get is tls.Config.GetCertificate: it looks at the files at most every
// few seconds and keeps the last good pair when a new one does not load.
func (r *certReloader) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) > 5*time.Second {
		r.checked = time.Now()
		if info, err := os.Stat(r.certFile); err == nil && !info.ModTime().Equal(r.modTime) {
			_ = r.load()
		}
	}
	return r.cert, nil
}
