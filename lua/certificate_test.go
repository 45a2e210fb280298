package lua_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"slices"
	"strings"
	"testing"
	"time"
)

// Tests of switchyard/certificate.lua (certificates by SNI) and the TLS
// hosts switchyard/ingress.lua reads, run by TestDataPlane.

type certConfig struct {
	Certificates map[string]string    `json:"certificates"`
	Servers      map[string]string    `json:"servers"`
	OCSP         map[string]ocspEntry `json:"ocsp,omitempty"`
}

// ocspEntry is a staple as the applier posts it.
type ocspEntry struct {
	Response []byte `json:"response"`
	Expires  int64  `json:"expires"`
}

func (dp *dataPlane) postCertificates(cfg certConfig) (int, string) {
	dp.t.Helper()
	body, err := json.Marshal(cfg)
	must(dp.t, err)
	return dp.configRequest("POST", "/configuration/certificates", string(body))
}

// handshake returns the leaf certificate served for sni ("" sends no SNI).
func (dp *dataPlane) handshake(t *testing.T, sni string) *x509.Certificate {
	t.Helper()
	return dp.connectionState(t, sni).PeerCertificates[0]
}

// connectionState is what a TLS client asking for sni sees (Go's client
// asks for an OCSP staple).
func (dp *dataPlane) connectionState(t *testing.T, sni string) tls.ConnectionState {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", dp.httpsAddr,
		&tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS handshake with SNI %q: %v", sni, err)
	}
	defer conn.Close()
	return conn.ConnectionState()
}

func (dp *dataPlane) testCertificates(t *testing.T) {
	a, aPEM := newCert(t, "a.example.test", nil)
	wild, wildPEM := newCert(t, "*.wild.example.test", nil)
	_, mismatchPEM := newCert(t, "m.example.test", nil)
	_, otherPEM := newCert(t, "other.example.test", nil)
	// certificate of m.example.test with the key of another certificate
	mCert, _ := splitPEM(t, mismatchPEM)
	_, otherKey := splitPEM(t, otherPEM)
	badPair := string(mCert) + string(otherKey)

	status, text := dp.postCertificates(certConfig{
		Certificates: map[string]string{"default/a": aPEM, "default/wild": wildPEM, "default/m": badPair},
		Servers: map[string]string{
			"a.example.test":      "default/a",
			"*.wild.example.test": "default/wild",
			"m.example.test":      "default/m",
		},
	})
	if status != 201 {
		t.Fatalf("POST certificates: %d %s", status, text)
	}

	tests := []struct {
		sni  string
		want *x509.Certificate
	}{
		{"a.example.test", a},
		{"A.Example.TEST", a},
		{"x.wild.example.test", wild},
		{"wild.example.test", dp.defCert},
		{"a.b.wild.example.test", dp.defCert},
		{"unknown.test", dp.defCert},
		{"m.example.test", dp.defCert}, // key does not match: default, not a failed handshake
		{"", dp.defCert},               // no SNI
	}
	for _, tt := range tests {
		t.Run("sni="+tt.sni, func(t *testing.T) {
			// several handshakes, so both workers (and their caches) answer
			for range 6 {
				if got := dp.handshake(t, tt.sni); !got.Equal(tt.want) {
					t.Fatalf("got certificate %q serial %v, want %q serial %v", got.Subject.CommonName, got.SerialNumber, tt.want.Subject.CommonName, tt.want.SerialNumber)
				}
			}
		})
	}
	if !strings.Contains(dp.errorLog(), "private key of default/m does not match") {
		t.Errorf("key mismatch was not logged")
	}

	// Replacing the certificate is picked up without a reload.
	workers := dp.workers()
	a2, a2PEM := newCert(t, "a.example.test", nil)
	status, text = dp.postCertificates(certConfig{
		Certificates: map[string]string{"default/a": a2PEM},
		Servers:      map[string]string{"a.example.test": "default/a"},
	})
	if status != 201 {
		t.Fatalf("POST replacement: %d %s", status, text)
	}
	for range 6 {
		if got := dp.handshake(t, "a.example.test"); !got.Equal(a2) {
			t.Fatalf("after replacement got serial %v, want %v", got.SerialNumber, a2.SerialNumber)
		}
	}
	if got := dp.handshake(t, "x.wild.example.test"); !got.Equal(dp.defCert) {
		t.Errorf("removed wildcard still served")
	}
	if after := dp.workers(); !slices.Equal(workers, after) {
		t.Errorf("worker PIDs changed: %v -> %v", workers, after)
	}

	// Dict full: 507, and the previous certificates stay.
	huge := strings.Repeat("x", 1200*1024) // the test dict has 1m
	status, text = dp.postCertificates(certConfig{
		Certificates: map[string]string{"default/a": aPEM, "default/huge": huge},
		Servers:      map[string]string{"a.example.test": "default/a", "huge.example.test": "default/huge"},
	})
	if status != 507 {
		t.Fatalf("POST into a full dict: %d %q, want 507", status, text)
	}
	for range 4 {
		if got := dp.handshake(t, "a.example.test"); !got.Equal(a2) {
			t.Fatalf("after 507 got serial %v, want the previous %v", got.SerialNumber, a2.SerialNumber)
		}
	}
}

// tlsHosts asks both workers (fresh connections) which hosts have TLS.
func (dp *dataPlane) tlsHosts(t *testing.T, hosts string) string {
	t.Helper()
	var first string
	for i := range 4 {
		r := dp.get("/tls-hosts?hosts="+hosts, "")
		if r.status != 200 {
			t.Fatalf("/tls-hosts: %d %s", r.status, r.body)
		}
		if i > 0 && r.body != first {
			t.Fatalf("workers disagree: %q vs %q", first, r.body)
		}
		first = r.body
	}
	return first
}

func (dp *dataPlane) testTLSHosts(t *testing.T) {
	_, aPEM := newCert(t, "a.example.test", nil)
	_, wildPEM := newCert(t, "*.wild.example.test", nil)
	hosts := "a.example.test,A.Example.Test,x.wild.example.test,wild.example.test,a.b.wild.example.test,b.example.test"
	steps := []struct {
		name string
		cfg  certConfig
		want string
	}{
		{"exact and wildcard", certConfig{
			Certificates: map[string]string{"default/a": aPEM, "default/wild": wildPEM},
			Servers:      map[string]string{"a.example.test": "default/a", "*.wild.example.test": "default/wild"},
		}, "a.example.test=true/true,A.Example.Test=true/true,x.wild.example.test=true/true,wild.example.test=false/false," +
			"a.b.wild.example.test=false/false,b.example.test=false/false"},
		// Without a wildcard name the miss path skips the suffix lookup;
		// the answer must not change.
		{"exact only", certConfig{
			Certificates: map[string]string{"default/a": aPEM},
			Servers:      map[string]string{"a.example.test": "default/a"},
		}, "a.example.test=true/true,A.Example.Test=true/true,x.wild.example.test=false/false,wild.example.test=false/false," +
			"a.b.wild.example.test=false/false,b.example.test=false/false"},
		{"wildcard only", certConfig{
			Certificates: map[string]string{"default/wild": wildPEM},
			Servers:      map[string]string{"*.wild.example.test": "default/wild"},
		}, "a.example.test=false/false,A.Example.Test=false/false,x.wild.example.test=true/true,wild.example.test=false/false," +
			"a.b.wild.example.test=false/false,b.example.test=false/false"},
	}
	for _, step := range steps {
		if status, text := dp.postCertificates(step.cfg); status != 201 {
			t.Fatalf("%s: POST certificates: %d %s", step.name, status, text)
		}
		if got := dp.tlsHosts(t, hosts); got != step.want {
			t.Errorf("%s:\n got %s\nwant %s", step.name, got, step.want)
		}
	}
}

// stapled is the OCSP response a client asking for one gets for sni.
func (dp *dataPlane) stapled(t *testing.T, sni string) []byte {
	t.Helper()
	return dp.connectionState(t, sni).OCSPResponse
}

// testOCSPStaples: the bytes posted as a certificate's OCSP response are
// stapled (NGINX does not look into them; the applier checked them), an
// expired one is not, and a certificate without one is served bare.
func (dp *dataPlane) testOCSPStaples(t *testing.T) {
	_, aPEM := newCert(t, "a.example.test", nil)
	_, bPEM := newCert(t, "b.example.test", nil)
	_, cPEM := newCert(t, "c.example.test", nil)
	staple := []byte("an OCSP response")
	status, text := dp.postCertificates(certConfig{
		Certificates: map[string]string{"default/a": aPEM, "default/b": bPEM, "default/c": cPEM},
		Servers:      map[string]string{"a.example.test": "default/a", "b.example.test": "default/b", "c.example.test": "default/c"},
		OCSP: map[string]ocspEntry{
			"default/a": {Response: staple, Expires: time.Now().Add(time.Hour).Unix()},
			"default/b": {Response: staple, Expires: time.Now().Add(-time.Minute).Unix()},
		},
	})
	if status != 201 {
		t.Fatalf("POST certificates: %d %s", status, text)
	}
	if got := dp.stapled(t, "a.example.test"); string(got) != string(staple) {
		t.Errorf("a.example.test stapled %q, want %q", got, staple)
	}
	if got := dp.stapled(t, "b.example.test"); got != nil {
		t.Errorf("b.example.test stapled an expired response: %q", got)
	}
	if got := dp.stapled(t, "c.example.test"); got != nil {
		t.Errorf("c.example.test stapled %q without a response", got)
	}
}

func (dp *dataPlane) testInvalidCertificates(t *testing.T) {
	tests := []struct {
		name, body, reason string
	}{
		{"not JSON", `{"certificates":`, "invalid JSON"},
		{"array", `[]`, "object"},
		{"certificates array", `{"certificates":["x"],"servers":{}}`, "certificates"},
		{"pem not string", `{"certificates":{"a/b":1},"servers":{}}`, "PEM"},
		{"unknown reference", `{"certificates":{},"servers":{"a.test":"a/b"}}`, "unknown certificate"},
		{"servers array", `{"certificates":{},"servers":["a.test"]}`, "servers"},
		{"unknown default", `{"certificates":{},"servers":{},"default":"a/b"}`, "default references an unknown certificate"},
		{"default not a string", `{"certificates":{"a/b":"x"},"servers":{},"default":1}`, "default references an unknown certificate"},
		{"ocsp array", `{"certificates":{"a/b":"x"},"servers":{},"ocsp":["x"]}`, "ocsp must be an object"},
		{"ocsp unknown certificate", `{"certificates":{"a/b":"x"},"servers":{},"ocsp":{"c/d":{"response":"eA==","expires":1}}}`, "unknown certificate"},
		{"ocsp not base64", `{"certificates":{"a/b":"x"},"servers":{},"ocsp":{"a/b":{"response":"%%%","expires":1}}}`, "not base64"},
		{"ocsp without expiry", `{"certificates":{"a/b":"x"},"servers":{},"ocsp":{"a/b":{"response":"eA=="}}}`, "{response, expires}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, text := dp.configRequest("POST", "/configuration/certificates", tt.body)
			if status != 400 || !strings.Contains(text, tt.reason) {
				t.Errorf("POST %s = %d %q, want 400 mentioning %q", tt.body, status, text, tt.reason)
			}
		})
	}
	// Empty configuration is valid and removes every certificate.
	if status, text := dp.configRequest("POST", "/configuration/certificates", `{"certificates":{},"servers":{}}`); status != 201 {
		t.Fatalf("POST empty: %d %s", status, text)
	}
	if got := dp.handshake(t, "a.example.test"); !got.Equal(dp.defCert) {
		t.Errorf("certificate still served after removing all")
	}
}

// newCert returns a self-signed certificate for cn and its PEM chain
// followed by the PKCS#8 key, the format the certificates endpoint takes.
func newCert(t *testing.T, cn string, key *ecdsa.PrivateKey) (*x509.Certificate, string) {
	t.Helper()
	if key == nil {
		var err error
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(t, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     []string{cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})...)
	return cert, string(out)
}

// splitPEM separates the certificate and key blocks of newCert's output.
func splitPEM(t *testing.T, data string) (certPEM, keyPEM []byte) {
	t.Helper()
	rest := []byte(data)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			certPEM = append(certPEM, pem.EncodeToMemory(block)...)
		} else {
			keyPEM = append(keyPEM, pem.EncodeToMemory(block)...)
		}
	}
	if certPEM == nil || keyPEM == nil {
		t.Fatal(errors.New("splitPEM: missing block"))
	}
	return certPEM, keyPEM
}
