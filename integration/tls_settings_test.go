package integration

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
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
