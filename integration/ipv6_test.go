package integration

import (
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestListensOnIPv6: with --http-addr and --https-addr listing [::1]
// besides 127.0.0.1 (the manifests list [::] besides 0.0.0.0, as
// ingress-nginx listens on both where the pod has IPv6), an Ingress is
// served over both; the ConfigMap's disable-ipv6 closes the IPv6
// listeners and keeps the IPv4 ones, and turning it off opens them again.
func TestListensOnIPv6(t *testing.T) {
	if l, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		t.Skipf("this host has no IPv6 loopback: %v", err)
	} else {
		l.Close()
	}
	e := newBackends(t)
	e.write("one.yaml", proxyIngress("one", "one.example.com", "echo-a", nil))
	e.sy = harness.StartSwitchyardDualStack(t, e.dir, "--configmap", configMapName)
	client := harness.NewClient()
	v6, v6TLS := harness.IPv6Twin(e.sy.HTTPAddr), harness.IPv6Twin(e.sy.HTTPSAddr)
	servedOver := func(addr string) func() error {
		return func() error {
			r, err := harness.Do(client, "GET", "http://"+addr+"/", "one.example.com", nil)
			if err == nil && !servedBy("a-1")(r) {
				err = fmt.Errorf("status %d", r.Status)
			}
			return err
		}
	}
	harness.WaitFor(t, changeTimeout, "one.example.com over IPv6", servedOver(v6))
	if err := servedOver(e.sy.HTTPAddr)(); err != nil {
		t.Fatalf("over IPv4: %v", err)
	}
	if err := dial(v6TLS); err != nil {
		t.Fatalf("the HTTPS listener on IPv6: %v", err)
	}

	e.write("config.yaml", configMapYAML(map[string]string{"disable-ipv6": "true"}))
	harness.WaitFor(t, changeTimeout, "the IPv6 listeners closed by disable-ipv6", func() error {
		for _, addr := range []string{v6, v6TLS} {
			if err := dial(addr); !errors.Is(err, syscall.ECONNREFUSED) {
				return fmt.Errorf("%s: %v, want connection refused", addr, err)
			}
		}
		return nil
	})
	if err := servedOver(e.sy.HTTPAddr)(); err != nil {
		t.Fatalf("over IPv4 with disable-ipv6: %v", err)
	}

	e.write("config.yaml", configMapYAML(map[string]string{"disable-ipv6": "false"}))
	harness.WaitFor(t, changeTimeout, "one.example.com over IPv6 again", servedOver(v6))
}

// dial opens and closes a TCP connection to addr.
func dial(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return err
	}
	return c.Close()
}
