package integration

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

const dnsTypeA, dnsTypeAAAA = 1, 28

// TestDisableIPv6DNSThroughNginx: NGINX resolves an ExternalName Service's
// host with A and AAAA queries, as ingress-nginx's resolver does by
// default, and with A queries only once disable-ipv6-dns is on.
func TestDisableIPv6DNSThroughNginx(t *testing.T) {
	bin := harness.Binary(t)
	port := harness.StartEcho(t, bin, "external", "ext-1")
	dns, queries := harness.StartCountingDNS(t, map[string]net.IP{"api.partner.test": net.ParseIP("127.0.0.1")})
	dir := externalNameDir(t, port)
	harness.WriteFile(t, filepath.Join(dir, "config.yaml"), configMapYAML(map[string]string{}))
	sy := harness.StartSwitchyard(t, dir, "--resolver", dns, "--configmap", configMapName)

	// served sends one request and says which queries it took: none when
	// the worker had the answer cached (valid=30s).
	served := func() (a, aaaa int, err error) {
		a0, aaaa0 := queries.Count(dnsTypeA), queries.Count(dnsTypeAAAA)
		r, err := sy.Get("partner.example.com", "/x")
		if err == nil && !servedBy("ext-1")(r) {
			err = fmt.Errorf("status %d: %s", r.Status, truncate(r.Body))
		}
		return queries.Count(dnsTypeA) - a0, queries.Count(dnsTypeAAAA) - aaaa0, err
	}
	harness.WaitFor(t, changeTimeout, "the ExternalName Service, resolved with A and AAAA", func() error {
		if _, _, err := served(); err != nil {
			return err
		}
		if queries.Count(dnsTypeA) == 0 || queries.Count(dnsTypeAAAA) == 0 {
			return fmt.Errorf("%d A and %d AAAA queries", queries.Count(dnsTypeA), queries.Count(dnsTypeAAAA))
		}
		return nil
	})

	harness.WriteFile(t, filepath.Join(dir, "config.yaml"), configMapYAML(map[string]string{"disable-ipv6-dns": "true"}))
	harness.WaitFor(t, changeTimeout, "a lookup of A only", func() error {
		a, aaaa, err := served()
		switch {
		case err != nil:
			return err
		case a == 0:
			return errors.New("answered from a worker's cache")
		case aaaa > 0:
			return fmt.Errorf("%d AAAA queries still", aaaa)
		}
		return nil
	})
}

// externalNameDir is a manifests dir with the ExternalName Service partner
// (api.partner.test, port) and the Ingress of partner.example.com to it.
func externalNameDir(t *testing.T, port int) string {
	t.Helper()
	dir := t.TempDir()
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "ext.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: partner, namespace: default}
spec:
  type: ExternalName
  externalName: api.partner.test
  ports: [{name: http, port: %d}]
---
`, port)+harness.IngressYAML("default", "partner", "partner.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "partner"}))
	return dir
}
