package integration

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

func tlsSecretYAML(ns, name string, certPEM, keyPEM []byte) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata: {name: %s, namespace: %s}\ntype: kubernetes.io/tls\ndata:\n  tls.crt: %s\n  tls.key: %s\n",
		name, ns, base64.StdEncoding.EncodeToString(certPEM), base64.StdEncoding.EncodeToString(keyPEM))
}

// TestDefaultSSLCertificate: --default-ssl-certificate is served for a
// name no certificate covers, to clients without SNI and to a TLS host
// whose Secret is missing; a host with its own certificate keeps it, and a
// new default certificate arrives without a reload.
func TestDefaultSSLCertificate(t *testing.T) {
	e := newBackends(t)
	own, ownKey := harness.SelfSigned(t, "secure.example.com")
	fallback, fallbackKey := harness.SelfSigned(t, "fallback.example.com")
	e.write("tls.yaml", harness.TLSIngressYAML("default", "secure", "secure.example.com", "echo-a", own, ownKey))
	// An Ingress whose TLS Secret does not exist.
	_, lostIngress, _ := strings.Cut(harness.TLSIngressYAML("default", "lost", "lost.example.com", "echo-a", own, ownKey), "---\n")
	e.write("lost.yaml", lostIngress)
	e.write("fallback.yaml", tlsSecretYAML("default", "fallback", fallback, fallbackKey))
	e.sy = harness.StartSwitchyard(t, e.dir, "--default-ssl-certificate", "default/fallback")
	addr := e.sy.HTTPSAddr

	harness.WaitFor(t, changeTimeout, "the default certificate for an unknown name", func() error {
		return harness.ExpectCertificate(addr, "unknown.example.com", "fallback.example.com")
	})
	for sni, want := range map[string]string{"": "fallback.example.com", "lost.example.com": "fallback.example.com", "secure.example.com": "secure.example.com"} {
		if err := harness.ExpectCertificate(addr, sni, want); err != nil {
			t.Errorf("SNI %q: %v", sni, err)
		}
	}

	workers := e.sy.WorkerPIDs(t)
	renewed, renewedKey := harness.SelfSigned(t, "renewed.example.com")
	e.write("fallback.yaml", tlsSecretYAML("default", "fallback", renewed, renewedKey))
	harness.WaitFor(t, changeTimeout, "the renewed default certificate", func() error {
		return harness.ExpectCertificate(addr, "unknown.example.com", "renewed.example.com")
	})
	if after := e.sy.WorkerPIDs(t); !slices.Equal(slices.Sorted(slices.Values(workers)), slices.Sorted(slices.Values(after))) {
		t.Errorf("NGINX reloaded for a certificate change: workers %v then %v", workers, after)
	}
}
