package integration

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestClientCertificatesThroughNginx: auth-tls-* through the real binary,
// plugins, NGINX and an echo backend. A certificate from the Secret's CA
// gets in, with what ingress-nginx sends upstream; none, or one from
// another CA, gets 400; a subject auth-tls-match-cn refuses gets 403; plain
// HTTP gets 403 (nothing to check there); optional_no_ca lets every client
// in and tells the backend the result; a missing Secret answers 503; and a
// host without mutual TLS never passes a client's own ssl-client-* headers.
func TestClientCertificatesThroughNginx(t *testing.T) {
	certA, keyA := harness.ClientCertificate(t, "client-a")
	certB, keyB := harness.ClientCertificate(t, "client-b") // from no listed CA
	certC, keyC := harness.ClientCertificate(t, "client-c")
	ing := func(name string, a map[string]string) string {
		annotations := map[string]string{}
		for k, v := range a {
			annotations[authPrefix+k] = v
		}
		return harness.AnnotatedIngressYAML("default", name, name+".example.com", annotations, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	}
	e := newEnv(t, map[string]string{
		"secret.yaml": secretYAML("default", "client-ca", map[string]string{"ca.crt": string(certA) + string(certC)}),
		"ingresses.yaml": strings.Join([]string{
			ing("mtls", map[string]string{"auth-tls-secret": "default/client-ca", "auth-tls-verify-depth": "1",
				"auth-tls-pass-certificate-to-upstream": "true", "auth-tls-match-cn": "CN=client-(a|b)"}),
			ing("optional", map[string]string{"auth-tls-secret": "client-ca", "auth-tls-verify-client": "optional_no_ca"}),
			ing("missing", map[string]string{"auth-tls-secret": "no-such-secret"}),
			ing("plain", nil),
		}, "---\n"),
	})
	e.eventually("plain.example.com", "/", "the Ingress without mutual TLS", servedBy("a-1"))
	get := func(host string, cert, key []byte) harness.Response {
		t.Helper()
		client := harness.NewClient()
		tlsConfig := client.Transport.(*http.Transport).TLSClientConfig
		tlsConfig.ServerName = host + ".example.com"
		if cert != nil {
			pair, err := tls.X509KeyPair(cert, key)
			if err != nil {
				t.Fatal(err)
			}
			// Sent whatever CAs NGINX names: Go would keep back one
			// from a CA not in the list.
			tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
		}
		r, err := harness.Do(client, http.MethodGet, "https://"+e.sy.HTTPSAddr+"/", host+".example.com", nil)
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		return r
	}
	harness.WaitFor(t, changeTimeout, "mutual TLS on mtls.example.com", func() error {
		if r := get("mtls", certA, keyA); r.Status != 200 || r.Echo == nil {
			return fmt.Errorf("a listed client got %d", r.Status)
		}
		return nil
	})

	r := get("mtls", certA, keyA)
	headers := r.Echo.Headers
	if got := first(headers, "Ssl-Client-Verify"); got != "SUCCESS" {
		t.Errorf("ssl-client-verify %q, want SUCCESS", got)
	}
	if got := first(headers, "Ssl-Client-Subject-Dn"); got != "CN=client-a" {
		t.Errorf("ssl-client-subject-dn %q, want CN=client-a", got)
	}
	if got := first(headers, "Ssl-Client-Issuer-Dn"); got != "CN=client-a" {
		t.Errorf("ssl-client-issuer-dn %q, want CN=client-a", got)
	}
	if got, err := url.QueryUnescape(first(headers, "Ssl-Client-Cert")); err != nil || strings.TrimSpace(got) != strings.TrimSpace(string(certA)) {
		t.Errorf("ssl-client-cert is not the client's certificate: %q", first(headers, "Ssl-Client-Cert"))
	}
	for _, c := range []struct {
		what      string
		cert, key []byte
		want      int
	}{
		{"no certificate", nil, nil, 400},
		{"a certificate from another CA", certB, keyB, 400},
		{"a listed CA, a subject auth-tls-match-cn refuses", certC, keyC, 403},
	} {
		if got := get("mtls", c.cert, c.key); got.Status != c.want || got.Echo != nil {
			t.Errorf("%s: %d, want %d", c.what, got.Status, c.want)
		}
	}
	if r, err := e.sy.Get("mtls.example.com", "/"); err != nil || r.Status != 403 {
		t.Errorf("plain HTTP to a host with mutual TLS: %d (%v), want 403", r.Status, err)
	}

	// optional_no_ca: everyone in, the backend told the result.
	for _, c := range []struct {
		what       string
		cert, key  []byte
		wantVerify string
	}{
		{"no certificate", nil, nil, "NONE"},
		{"a listed certificate", certA, keyA, "SUCCESS"},
		{"an unlisted certificate", certB, keyB, "FAILED:"},
	} {
		r := get("optional", c.cert, c.key)
		if r.Status != 200 || r.Echo == nil || !strings.HasPrefix(first(r.Echo.Headers, "Ssl-Client-Verify"), c.wantVerify) {
			t.Errorf("optional_no_ca, %s: %d, ssl-client-verify %q, want 200 and %s", c.what, r.Status, first(echoHeaders(r), "Ssl-Client-Verify"), c.wantVerify)
		}
		if first(echoHeaders(r), "Ssl-Client-Cert") != "" {
			t.Errorf("optional_no_ca, %s: the certificate went upstream without auth-tls-pass-certificate-to-upstream", c.what)
		}
	}

	if r := get("missing", certA, keyA); r.Status != 503 {
		t.Errorf("a missing auth-tls-secret: %d, want 503 (fail closed)", r.Status)
	}
	spoofed := map[string]string{"ssl-client-verify": "SUCCESS", "ssl-client-subject-dn": "CN=admin"}
	r, err := e.send(http.MethodGet, "plain.example.com", "/", spoofed, nil)
	if err != nil || r.Echo == nil {
		t.Fatalf("plain: %v", err)
	}
	for name := range spoofed {
		if got := first(r.Echo.Headers, http.CanonicalHeaderKey(name)); got != "" {
			t.Errorf("a client's own %s reached the backend: %q", name, got)
		}
	}
}

func first(h map[string][]string, name string) string {
	if v := h[name]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func echoHeaders(r harness.Response) map[string][]string {
	if r.Echo == nil {
		return nil
	}
	return r.Echo.Headers
}
