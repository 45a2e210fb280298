package harness

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"testing"
	"time"

	"switchyard.dev/switchyard/internal/nginx"
)

// SelfSigned makes a certificate and key (PEM) for host.
func SelfSigned(t testing.TB, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	cert, key, err := nginx.SelfSignedCertificate(host, []string{host}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

// ClientCertificate makes a self-signed certificate and key (PEM) a client
// authenticates with (extended key usage clientAuth), named cn.
func ClientCertificate(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return selfSigned(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: cn}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
}

// LoopbackCertificate makes a self-signed certificate and key (PEM) for
// 127.0.0.1 and localhost, for servers and their clients alike, that is
// its own CA: the nodes of a cluster on loopback verify each other with it.
func LoopbackCertificate(t testing.TB, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	return selfSigned(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: cn}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}, IsCA: true,
	})
}

// selfSigned signs tmpl (valid for a day from an hour ago) with a new P-256
// key.
func selfSigned(t testing.TB, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

// TLSIngressYAML is a kubernetes.io/tls Secret and an Ingress serving host
// over TLS with it.
func TLSIngressYAML(ns, name, host, service string, certPEM, keyPEM []byte) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: %[2]s-tls, namespace: %[1]s}
type: kubernetes.io/tls
data:
  tls.crt: %[5]s
  tls.key: %[6]s
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: %[2]s, namespace: %[1]s}
spec:
  ingressClassName: switchyard
  tls:
  - hosts: [%[3]s]
    secretName: %[2]s-tls
  rules:
  - host: %[3]s
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: %[4]s, port: {name: http}}}}
`, ns, name, host, service, base64.StdEncoding.EncodeToString(certPEM), base64.StdEncoding.EncodeToString(keyPEM))
}

// ServedCertificate does a TLS handshake with SNI and returns the leaf
// certificate's DER bytes and common name.
func ServedCertificate(addr, sni string) (der []byte, commonName string, err error) {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: sni, InsecureSkipVerify: true}) // the test inspects the certificate itself
	if err != nil {
		return nil, "", err
	}
	defer conn.Close()
	leaf := conn.ConnectionState().PeerCertificates[0]
	return leaf.Raw, leaf.Subject.CommonName, nil
}

// ExpectCertificate checks the common name served for sni.
func ExpectCertificate(addr, sni, wantCN string) error {
	_, cn, err := ServedCertificate(addr, sni)
	if err != nil {
		return err
	}
	if cn != wantCN {
		return fmt.Errorf("SNI %s: served CN %q, want %q", sni, cn, wantCN)
	}
	return nil
}

// ExpectCertificatePEM checks that exactly certPEM is served for sni.
func ExpectCertificatePEM(addr, sni string, certPEM []byte) error {
	der, _, err := ServedCertificate(addr, sni)
	if err != nil {
		return err
	}
	block, _ := pem.Decode(certPEM)
	if block == nil || !bytes.Equal(block.Bytes, der) {
		return fmt.Errorf("SNI %s: a different certificate is served", sni)
	}
	return nil
}

// ServeConns accepts connections on l until the test ends, each handled
// by handle in its own goroutine, and returns l's port.
func ServeConns(t testing.TB, l net.Listener, handle func(net.Conn)) int {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}
