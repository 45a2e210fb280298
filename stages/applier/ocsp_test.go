package applier

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/crypto/ocsp"

	"switchyard.dev/switchyard/internal/ocsptest"
)

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// stapleStatus is the status the stapler's response for id says.
func stapleStatus(s *stapler, id string, ca *ocsptest.CA) (int, error) {
	st, ok := s.staples(time.Now())[id]
	if !ok {
		return 0, fmt.Errorf("no staple for %s", id)
	}
	r, err := ocsp.ParseResponse(st.Response, ca.Cert)
	if err != nil {
		return 0, err
	}
	return r.Status, nil
}

func TestStaplerFetchesRefreshesAndRetries(t *testing.T) {
	ca := ocsptest.New(t)
	ca.Validity = 4 * time.Second // refreshed after ocspMinRefresh at the soonest: not here
	leaf, chain, key := ca.Issue(t, "a.example.test")
	s := newStapler(zap.NewNop(), 20*time.Millisecond, 100*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.run(ctx)

	pemData := string(chain) + string(key)
	s.set(map[string]luaCertificate{"default/a": {PEM: pemData, Hosts: []string{"a.example.test"}, OCSP: true}})
	waitFor(t, "a good staple", func() error {
		status, err := stapleStatus(s, "default/a", ca)
		if err == nil && status != ocsp.Good {
			err = fmt.Errorf("status %s", statusName(status))
		}
		return err
	})
	select {
	case <-s.Changed():
	default:
		t.Error("a new staple did not signal Changed")
	}

	// Revoked: a new certificate of the same id is fetched at once, and
	// its revoked status is stapled.
	ca.SetStatus(leaf, ocsp.Revoked)
	leaf2, chain2, key2 := ca.Issue(t, "a.example.test")
	ca.SetStatus(leaf2, ocsp.Revoked)
	s.set(map[string]luaCertificate{"default/a": {PEM: string(chain2) + string(key2), OCSP: true}})
	if _, ok := s.staples(time.Now())["default/a"]; ok {
		t.Error("the old certificate's staple is kept for its replacement")
	}
	waitFor(t, "a revoked staple", func() error {
		status, err := stapleStatus(s, "default/a", ca)
		if err == nil && status != ocsp.Revoked {
			err = fmt.Errorf("status %s", statusName(status))
		}
		return err
	})

	// enable-ocsp off: no staple.
	s.set(map[string]luaCertificate{"default/a": {PEM: string(chain2) + string(key2)}})
	if len(s.staples(time.Now())) != 0 {
		t.Error("a staple is kept with OCSP off")
	}
}

func TestStaplerRetriesAFailingResponder(t *testing.T) {
	ca := ocsptest.New(t)
	ca.Failing.Store(true)
	_, chain, key := ca.Issue(t, "b.example.test")
	s := newStapler(zap.NewNop(), 20*time.Millisecond, 50*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.run(ctx)
	s.set(map[string]luaCertificate{"default/b": {PEM: string(chain) + string(key), OCSP: true}})
	waitFor(t, "retries", func() error {
		if n := ca.Requests.Load(); n < 3 {
			return fmt.Errorf("%d requests", n)
		}
		return nil
	})
	if len(s.staples(time.Now())) != 0 {
		t.Fatal("a staple without an answer")
	}
	ca.Failing.Store(false)
	waitFor(t, "a staple once the responder answers", func() error {
		_, err := stapleStatus(s, "default/b", ca)
		return err
	})
}

func TestOCSPEntryNeedsResponderAndIssuer(t *testing.T) {
	ca := ocsptest.New(t)
	_, chain, key := ca.Issue(t, "c.example.test")
	leafOnly, _, _ := strings.Cut(string(chain), "-----END CERTIFICATE-----")
	leafOnly += "-----END CERTIFICATE-----\n"
	_, selfSigned := newTestCert(t)
	tests := []struct {
		name, pem, want string
	}{
		{"whole chain", string(chain) + string(key), ""},
		{"no issuer", leafOnly + string(key), "issuer"},
		{"no responder", selfSigned, "no OCSP responder"},
		{"no certificate", string(key), "no certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := newOCSPEntry(tt.pem)
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("newOCSPEntry = %v, want an error with %q", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "PRIVATE") {
				t.Errorf("the error quotes the key: %v", err)
			}
		})
	}
}

// TestCertificatesPayloadCarriesStaples: a staple goes with the
// certificate that asks for one, as base64 DER with its expiry.
func TestCertificatesPayloadCarriesStaples(t *testing.T) {
	d := desiredState{Certificates: map[string]luaCertificate{
		"default/a": {PEM: "A", Hosts: []string{"a.test"}, OCSP: true},
		"default/b": {PEM: "B", Hosts: []string{"b.test"}},
	}}
	expires := time.Unix(2000000000, 0)
	staples := map[string]ocspStaple{
		"default/a": {Response: []byte{1, 2, 3}, Expires: expires},
		"default/b": {Response: []byte{4}, Expires: expires}, // OCSP off for b
	}
	body, err := d.certificatesPayload(staples)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		OCSP map[string]luaStaple `json:"ocsp"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]luaStaple{"default/a": {Response: []byte{1, 2, 3}, Expires: 2000000000}}
	if fmt.Sprint(got.OCSP) != fmt.Sprint(want) {
		t.Errorf("ocsp = %v, want %v", got.OCSP, want)
	}
	if !strings.Contains(string(body), `"response":"AQID"`) {
		t.Errorf("the response is not base64 in %s", body)
	}
}

// newTestCert is a self-signed certificate that names no OCSP responder,
// as PEM with its key.
func newTestCert(t *testing.T) (*x509.Certificate, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "plain.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pkcs8, _ := x509.MarshalPKCS8PrivateKey(key)
	return cert, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})) +
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
}
