// Package ocsptest is a certificate authority with an OCSP responder on
// loopback, for tests of OCSP stapling (enable-ocsp).
package ocsptest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"
)

// CA issues leaf certificates that name its responder, and answers OCSP
// requests about them with the status set for their serial number.
type CA struct {
	Cert *x509.Certificate
	key  *ecdsa.PrivateKey
	srv  *httptest.Server

	mu       sync.Mutex
	statuses map[string]int // serial → ocsp.Good, ocsp.Revoked, ...
	// Validity is NextUpdate - ThisUpdate of the answers.
	Validity time.Duration
	// Failing makes the responder answer 503.
	Failing atomic.Bool
	// Requests counts the OCSP requests answered or failed.
	Requests atomic.Int64
}

// New starts a CA and its responder; both stop with the test.
func New(t testing.TB) *CA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "switchyard test OCSP CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	ca := &CA{Cert: cert, key: key, statuses: map[string]int{}, Validity: time.Hour}
	ca.srv = httptest.NewServer(http.HandlerFunc(ca.answer))
	t.Cleanup(ca.srv.Close)
	return ca
}

// URL is the responder's address, as leaves name it.
func (ca *CA) URL() string { return ca.srv.URL }

// Issue makes a leaf for host, good until SetStatus says otherwise, and
// returns its PEM chain (leaf, then the CA) and its PEM key.
func (ca *CA) Issue(t testing.TB, host string) (leaf *x509.Certificate, chainPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		OCSPServer: []string{ca.URL()},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if leaf, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ca.SetStatus(leaf, ocsp.Good)
	chainPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	chainPEM = append(chainPEM, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw})...)
	return leaf, chainPEM, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})
}

// SetStatus sets what the responder says about leaf.
func (ca *CA) SetStatus(leaf *x509.Certificate, status int) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	ca.statuses[leaf.SerialNumber.String()] = status
}

func (ca *CA) answer(w http.ResponseWriter, r *http.Request) {
	ca.Requests.Add(1)
	if ca.Failing.Load() {
		http.Error(w, "failing on purpose", http.StatusServiceUnavailable)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := ocsp.ParseRequest(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	ca.mu.Lock()
	status, known := ca.statuses[req.SerialNumber.String()]
	validity := ca.Validity
	ca.mu.Unlock()
	if !known {
		status = ocsp.Unknown
	}
	now := time.Now().Truncate(time.Second)
	tmpl := ocsp.Response{Status: status, SerialNumber: req.SerialNumber, IssuerHash: crypto.SHA1,
		ThisUpdate: now.Add(-time.Minute), NextUpdate: now.Add(validity)}
	if status == ocsp.Revoked {
		tmpl.RevokedAt, tmpl.RevocationReason = now.Add(-time.Minute), ocsp.KeyCompromise
	}
	der, err := ocsp.CreateResponse(ca.Cert, ca.Cert, tmpl, ca.key)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/ocsp-response")
	_, _ = w.Write(der)
}
