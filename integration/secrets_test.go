package integration

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestSecretsNeverPrinted: with a basic-auth Secret and a TLS Secret
// served, neither `switchyard render`, nor `switchyard trace`, nor the
// debug log of `switchyard run` shows a password hash or key material.
func TestSecretsNeverPrinted(t *testing.T) {
	bin := harness.Binary(t)
	dir := t.TempDir()
	port := harness.StartEcho(t, bin, "echo-a", "a-1")
	certPEM, keyPEM := harness.SelfSigned(t, "tls.example.com")
	keyLine := strings.Split(string(keyPEM), "\n")[1] // a line of the key's base64 body
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", port))
	objects := map[string]string{
		"secret.yaml": secretYAML("default", "users", map[string]string{"auth": "alice:" + apr1Hash + "\n"}),
		"auth.yaml": harness.AnnotatedIngressYAML("default", "guarded", "guarded.example.com", basicAuthAnnotations("users"),
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
		"tls.yaml": harness.TLSIngressYAML("default", "tls", "tls.example.com", "echo-a", certPEM, keyPEM),
		// The same key as a backend client key (proxy-ssl-secret).
		"backend-secret.yaml": secretYAML("default", "backend-client", map[string]string{
			"ca.crt": string(certPEM), "tls.crt": string(certPEM), "tls.key": string(keyPEM)}),
		"backend.yaml": harness.AnnotatedIngressYAML("default", "backend-tls", "backend-tls.example.com",
			map[string]string{authPrefix + "backend-protocol": "HTTPS", authPrefix + "proxy-ssl-secret": "backend-client"},
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
	}
	secrets := []string{apr1Hash, "abcdefgh$", keyLine, "PRIVATE KEY"}
	expectNone := func(what, text string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s shows Secret-derived content %q", what, s)
			}
		}
	}

	natsAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	keys := harness.BusKeys(t)
	sy := harness.StartSwitchyard(t, dir, "--nats-listen", natsAddr, "--nats-keys", keys)
	trace := harness.Start(t, bin, "trace", "--nats", "nats://"+natsAddr, "--nats-keys", keys)
	harness.WaitFor(t, 10*time.Second, "trace to subscribe", func() error {
		if !strings.Contains(trace.Output.String(), "SUBJECT / KEY") {
			return fmt.Errorf("no header yet")
		}
		return nil
	})
	for name, content := range objects {
		harness.WriteFile(t, filepath.Join(dir, name), content)
	}
	waitStatus(t, sy, "guarded.example.com", 401)
	harness.WaitFor(t, 30*time.Second, "the TLS Ingress and its trace", func() error {
		if err := harness.ExpectCertificatePEM(sy.HTTPSAddr, "tls.example.com", certPEM); err != nil {
			return err
		}
		if !strings.Contains(trace.Output.String(), "htpasswd") {
			return fmt.Errorf("the htpasswd file is not in the trace yet")
		}
		return nil
	})
	expectNone("switchyard trace", trace.Output.String())
	expectNone("the log of switchyard run", sy.Output.String())

	out, err := exec.Command(bin, "render", "--manifests", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("render: %v\n%s", err, out)
	}
	expectNone("switchyard render", string(out))
	if !strings.Contains(string(out), ".key.pem") || !strings.Contains(string(out), "proxy_ssl_certificate_key") {
		t.Errorf("render shows no backend client key file:\n%s", out)
	}
	if !strings.Contains(string(out), "bytes of secret-derived content>") || !strings.Contains(string(out), "tls.example.com") {
		t.Errorf("render shows neither the redacted htpasswd file nor the certificate's host:\n%s", out)
	}
}
