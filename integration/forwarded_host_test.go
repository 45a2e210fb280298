package integration

import (
	"fmt"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestForwardedHostHeaderThroughNginx: with use-forwarded-headers, the
// host sent upstream (Host and X-Forwarded-Host) is the client's
// X-Forwarded-Host, or forwarded-host-header's header once the key names
// another; without use-forwarded-headers, neither is trusted.
func TestForwardedHostHeaderThroughNginx(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("fwd", nil))
	e.write("config.yaml", configMapYAML(map[string]string{"use-forwarded-headers": "true"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	claims := map[string]string{"X-Forwarded-Host": "xfh.example.net", "X-Original-Host": "orig.example.net"}

	upstreamHostIs := func(what, want string) {
		t.Helper()
		harness.WaitFor(t, changeTimeout, what, func() error {
			r, err := e.tryWith("fwd.example.com", "/", claims)
			if err != nil {
				return err
			}
			if r.Status != 200 || r.Echo == nil {
				return fmt.Errorf("status %d: %s", r.Status, truncate(r.Body))
			}
			fwd := r.Echo.Headers["X-Forwarded-Host"]
			if r.Echo.Host != want || len(fwd) != 1 || fwd[0] != want {
				return fmt.Errorf("backend saw Host %q and X-Forwarded-Host %q, want %q", r.Echo.Host, fwd, want)
			}
			return nil
		})
	}
	upstreamHostIs("the default forwarded-host-header, X-Forwarded-Host", "xfh.example.net")

	e.write("config.yaml", configMapYAML(map[string]string{"use-forwarded-headers": "true", "forwarded-host-header": "X-Original-Host"}))
	upstreamHostIs("forwarded-host-header X-Original-Host", "orig.example.net")

	// A request without the header: the client's own Host.
	r, err := e.tryWith("fwd.example.com", "/", map[string]string{"X-Forwarded-Host": "xfh.example.net"})
	if err != nil || r.Echo == nil || r.Echo.Host != "fwd.example.com" {
		t.Fatalf("without X-Original-Host: %v %+v, want the client's Host", err, r.Echo)
	}

	e.write("config.yaml", configMapYAML(map[string]string{"forwarded-host-header": "X-Original-Host"}))
	upstreamHostIs("use-forwarded-headers off: no header is trusted", "fwd.example.com")
}
