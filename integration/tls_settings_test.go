package integration

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// handshake opens a TLS connection to addr with sni and returns the state;
// cache carries sessions between calls.
func handshake(addr, sni string, minV, maxV uint16, cache tls.ClientSessionCache) (tls.ConnectionState, error) {
	d := &net.Dialer{Timeout: 5 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{
		ServerName: sni, InsecureSkipVerify: true, // the certificate is not what is tested here
		MinVersion: minV, MaxVersion: maxV, ClientSessionCache: cache,
	})
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	// A TLS 1.3 ticket arrives after the handshake; reading gives it a
	// chance to be stored before the connection closes.
	_ = conn.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	_, _ = conn.Read(make([]byte, 1))
	return conn.ConnectionState(), nil
}

// resumes says whether a second handshake resumes the first's session.
func resumes(addr, sni string, version uint16) (bool, error) {
	cache := tls.NewLRUClientSessionCache(4)
	if _, err := handshake(addr, sni, version, version, cache); err != nil {
		return false, err
	}
	state, err := handshake(addr, sni, version, version, cache)
	return state.DidResume, err
}

// TestTLSSettingsThroughNginx: ssl-protocols, ssl-session-tickets (with the
// session cache off, tickets alone decide resumption), ssl-reject-handshake
// and http-redirect-code, as a client sees them.
func TestTLSSettingsThroughNginx(t *testing.T) {
	e := newBackends(t)
	cert, key := harness.SelfSigned(t, "secure.example.com")
	e.write("tls.yaml", harness.TLSIngressYAML("default", "secure", "secure.example.com", "echo-a", cert, key))
	e.write("config.yaml", configMapYAML(map[string]string{
		"ssl-session-cache": "false", "ssl-session-tickets": "true", "ssl-reject-handshake": "true", "http-redirect-code": "301",
	}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	addr := e.sy.HTTPSAddr

	harness.WaitFor(t, changeTimeout, "a TLS 1.2 session resumed by its ticket", func() error {
		if ok, err := resumes(addr, "secure.example.com", tls.VersionTLS12); err != nil || !ok {
			return fmt.Errorf("resumed %v: %v", ok, err)
		}
		return nil
	})
	if _, err := handshake(addr, "unknown.example.com", tls.VersionTLS12, tls.VersionTLS13, nil); err == nil {
		t.Error("a handshake for a name no Ingress serves succeeded with ssl-reject-handshake on")
	}
	if _, err := handshake(addr, "secure.example.com", tls.VersionTLS12, tls.VersionTLS13, nil); err != nil {
		t.Errorf("a handshake for the served name: %v", err)
	}
	if r := e.getWith("secure.example.com", "/x?y=1", nil); r.Status != 301 || r.Header.Get("Location") == "" {
		t.Errorf("plain HTTP to a TLS host: %d %q, want 301 to HTTPS", r.Status, r.Header.Get("Location"))
	}

	e.write("config.yaml", configMapYAML(map[string]string{
		"ssl-protocols": "TLSv1.2", "ssl-session-cache": "false", "ssl-session-tickets": "false",
	}))
	harness.WaitFor(t, changeTimeout, "TLS 1.3 refused", func() error {
		if _, err := handshake(addr, "secure.example.com", tls.VersionTLS13, tls.VersionTLS13, nil); err == nil {
			return errors.New("a TLS 1.3 handshake succeeded")
		}
		return nil
	})
	// Polled too: an old worker may still hold a connection or two.
	harness.WaitFor(t, changeTimeout, "no resumption without tickets or cache", func() error {
		if ok, err := resumes(addr, "secure.example.com", tls.VersionTLS12); err != nil || ok {
			return fmt.Errorf("resumed %v: %v", ok, err)
		}
		return nil
	})
	harness.WaitFor(t, changeTimeout, "an unknown name served the default certificate once ssl-reject-handshake is off", func() error {
		_, err := handshake(addr, "unknown.example.com", tls.VersionTLS12, tls.VersionTLS12, nil)
		return err
	})
	e.eventually("secure.example.com", "/", "the default http-redirect-code 308", status(308))
}

// TestSSLSessionTicketKeyThroughNginx: two controllers (two replicas) given
// the same ssl-session-ticket-key resume each other's TLS sessions, with
// TLS 1.2 and 1.3 tickets; without it each NGINX's own keys resume its
// own sessions only, and so after the key turns invalid. The key file is
// its owner's only.
func TestSSLSessionTicketKeyThroughNginx(t *testing.T) {
	const host = "tickets.example.com"
	e := newBackends(t)
	cert, key := harness.SelfSigned(t, host)
	e.write("tls.yaml", harness.TLSIngressYAML("default", "tickets", host, "echo-a", cert, key))
	// Without the session cache, tickets alone decide resumption.
	settings := map[string]string{"ssl-session-cache": "false", "ssl-session-tickets": "true"}
	e.write("config.yaml", configMapYAML(settings))
	one := harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	two := harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	// crossResumes says whether a session the first replica issued
	// resumes on the second.
	crossResumes := func(version uint16) (bool, error) {
		cache := tls.NewLRUClientSessionCache(4)
		if _, err := handshake(one.HTTPSAddr, host, version, version, cache); err != nil {
			return false, err
		}
		state, err := handshake(two.HTTPSAddr, host, version, version, cache)
		return state.DidResume, err
	}
	expect := func(what string, want bool) {
		t.Helper()
		for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			// Polled: after a reload, an old worker may still answer.
			harness.WaitFor(t, changeTimeout, fmt.Sprintf("%s (TLS %x)", what, v), func() error {
				if ok, err := crossResumes(v); err != nil || ok != want {
					return fmt.Errorf("resumed on the other replica: %v (%v)", ok, err)
				}
				return nil
			})
		}
	}
	for _, sy := range []*harness.Switchyard{one, two} {
		harness.WaitFor(t, changeTimeout, "a session resumed on the replica that issued it", func() error {
			if ok, err := resumes(sy.HTTPSAddr, host, tls.VersionTLS12); err != nil || !ok {
				return fmt.Errorf("resumed %v: %v", ok, err)
			}
			return nil
		})
	}
	expect("no resumption across replicas with their own keys", false)

	settings["ssl-session-ticket-key"] = base64.StdEncoding.EncodeToString(randomBytes(t, 80))
	e.write("config.yaml", configMapYAML(settings))
	expect("resumption across replicas with the shared key", true)
	for _, sy := range []*harness.Switchyard{one, two} {
		path := filepath.Join(sy.Prefix(), "conf", "auth", "ssl-session-ticket.key")
		if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 || info.Size() != 80 {
			t.Errorf("%s: %v (%v), want 80 bytes readable by its owner only", path, info, err)
		}
	}

	// 32 bytes: NGINX would refuse the file; the key is left out instead.
	settings["ssl-session-ticket-key"] = base64.StdEncoding.EncodeToString(randomBytes(t, 32))
	e.write("config.yaml", configMapYAML(settings))
	expect("no resumption across replicas once the key is invalid", false)
	if _, err := handshake(one.HTTPSAddr, host, tls.VersionTLS12, tls.VersionTLS13, nil); err != nil {
		t.Errorf("the host stopped being served: %v", err)
	}
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSSLDHParamThroughNginx: without ssl-dh-param NGINX offers no DHE
// cipher; with it, a client that speaks only DHE gets a handshake with the
// Secret's parameters, and a Secret that goes bad keeps none of it.
func TestSSLDHParamThroughNginx(t *testing.T) {
	e := newBackends(t)
	cert, key := rsaSelfSigned(t, "dh.example.com")
	e.write("tls.yaml", harness.TLSIngressYAML("default", "dh", "dh.example.com", "echo-a", cert, key))
	dh, err := os.ReadFile("../stages/translator/testdata/dhparam2048.pem")
	if err != nil {
		t.Fatal(err)
	}
	e.write("config.yaml", configMapYAML(map[string]string{"ssl-dh-param": "switchyard-system/dhparam"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	dhe := func() error {
		out, err := exec.Command("openssl", "s_client", "-connect", e.sy.HTTPSAddr, "-servername", "dh.example.com",
			"-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256").CombinedOutput()
		if err != nil || !strings.Contains(string(out), "DHE-RSA-AES128-GCM-SHA256") || !strings.Contains(string(out), "DH, 2048 bits") {
			return fmt.Errorf("no DHE handshake with 2048-bit parameters (%v):\n%s", err, out)
		}
		return nil
	}
	harness.WaitFor(t, changeTimeout, "the TLS host", func() error {
		_, err := handshake(e.sy.HTTPSAddr, "dh.example.com", tls.VersionTLS12, tls.VersionTLS13, nil)
		return err
	})
	if dhe() == nil {
		t.Fatal("a DHE handshake succeeded while the ssl-dh-param Secret is missing")
	}
	e.write("dh.yaml", secretYAML("switchyard-system", "dhparam", map[string]string{"dhparam.pem": string(dh)}))
	harness.WaitFor(t, changeTimeout, "a DHE handshake with the Secret's parameters", dhe)

	e.write("dh.yaml", secretYAML("switchyard-system", "dhparam", map[string]string{"dhparam.pem": "not parameters"}))
	harness.WaitFor(t, changeTimeout, "DHE off again with bad parameters", func() error {
		if dhe() == nil {
			return errors.New("a DHE handshake still succeeds")
		}
		return nil
	})
	if _, err := handshake(e.sy.HTTPSAddr, "dh.example.com", tls.VersionTLS12, tls.VersionTLS13, nil); err != nil {
		t.Errorf("the host stopped being served: %v", err)
	}
}

// rsaSelfSigned is a self-signed RSA certificate (DHE-RSA needs one).
func rsaSelfSigned(t *testing.T, host string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}
