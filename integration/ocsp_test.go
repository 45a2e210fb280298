package integration

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"golang.org/x/crypto/ocsp"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/ocsptest"
)

// stapledStatus is the OCSP status NGINX staples for sni, checked against
// the leaf and its issuer; an error when nothing is stapled.
func stapledStatus(addr, sni string, leaf, issuer *x509.Certificate) (int, error) {
	state, err := handshake(addr, sni, tls.VersionTLS12, tls.VersionTLS13, nil)
	if err != nil {
		return 0, fmt.Errorf("handshake: %w", err)
	}
	if len(state.OCSPResponse) == 0 {
		return 0, errors.New("no OCSP response stapled")
	}
	r, err := ocsp.ParseResponseForCert(state.OCSPResponse, leaf, issuer)
	if err != nil {
		return 0, fmt.Errorf("stapled response: %w", err)
	}
	return r.Status, nil
}

// TestOCSPStaplingThroughNginx: with enable-ocsp, a certificate whose
// responder (a loopback OCSP responder of the test's CA) answers is served
// with that answer stapled, good or revoked; one whose responder fails is
// served without a staple, never with a failed handshake; and enable-ocsp
// off staples nothing.
func TestOCSPStaplingThroughNginx(t *testing.T) {
	ca := ocsptest.New(t)
	good, goodChain, goodKey := ca.Issue(t, "good.example.com")
	revoked, revokedChain, revokedKey := ca.Issue(t, "revoked.example.com")
	ca.SetStatus(revoked, ocsp.Revoked)
	down := ocsptest.New(t)
	down.Failing.Store(true)
	_, downChain, downKey := down.Issue(t, "down.example.com")

	e := newBackends(t)
	e.write("good.yaml", harness.TLSIngressYAML("default", "good", "good.example.com", "echo-a", goodChain, goodKey))
	e.write("revoked.yaml", harness.TLSIngressYAML("default", "revoked", "revoked.example.com", "echo-a", revokedChain, revokedKey))
	e.write("down.yaml", harness.TLSIngressYAML("default", "down", "down.example.com", "echo-a", downChain, downKey))
	e.write("config.yaml", configMapYAML(map[string]string{"enable-ocsp": "true"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	addr := e.sy.HTTPSAddr

	for _, tt := range []struct {
		host string
		leaf *x509.Certificate
		want int
	}{{"good.example.com", good, ocsp.Good}, {"revoked.example.com", revoked, ocsp.Revoked}} {
		harness.WaitFor(t, changeTimeout, tt.host+" stapled", func() error {
			status, err := stapledStatus(addr, tt.host, tt.leaf, ca.Cert)
			if err == nil && status != tt.want {
				err = fmt.Errorf("stapled status %d, want %d", status, tt.want)
			}
			return err
		})
	}
	// openssl sees the same: the revoked certificate's staple says so.
	out, err := exec.Command("openssl", "s_client", "-connect", addr, "-servername", "revoked.example.com", "-status").CombinedOutput()
	if !strings.Contains(string(out), "Cert Status: revoked") {
		t.Errorf("openssl s_client -status (%v) shows no revoked staple:\n%s", err, out)
	}

	// The failing responder has been asked; its host is served bare.
	harness.WaitFor(t, changeTimeout, "the failing responder asked", func() error {
		if down.Requests.Load() == 0 {
			return errors.New("not asked yet")
		}
		return nil
	})
	state, err := handshake(addr, "down.example.com", tls.VersionTLS12, tls.VersionTLS13, nil)
	if err != nil {
		t.Fatalf("a host whose responder fails: %v", err)
	}
	if len(state.OCSPResponse) != 0 {
		t.Errorf("a host whose responder fails got a staple")
	}
	if r, err := e.sy.GetTLS("down.example.com", "/"); err != nil || r.Status != 200 {
		t.Errorf("a host whose responder fails answered %d, %v", r.Status, err)
	}

	e.write("config.yaml", configMapYAML(map[string]string{"enable-ocsp": "false"}))
	harness.WaitFor(t, changeTimeout, "no staple with enable-ocsp off", func() error {
		state, err := handshake(addr, "good.example.com", tls.VersionTLS12, tls.VersionTLS13, nil)
		if err != nil {
			return err
		}
		if len(state.OCSPResponse) != 0 {
			return errors.New("still stapled")
		}
		return nil
	})
	for _, l := range strings.Split(e.sy.Output.String(), "\n") {
		if strings.Contains(l, "PRIVATE KEY") || strings.Contains(l, "BEGIN CERTIFICATE") {
			t.Errorf("a log line holds PEM data: %.200s", l)
		}
	}
}
