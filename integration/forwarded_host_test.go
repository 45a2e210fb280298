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
	e := startWithConfigMap(t, map[string]string{"ing.yaml": annotatedIngressYAML("fwd", nil)},
		map[string]string{"use-forwarded-headers": "true"})
	claims := map[string]string{"X-Forwarded-Host": "xfh.example.net", "X-Original-Host": "orig.example.net"}

	// Each check polls: the old workers may answer a request or two
	// while NGINX reloads.
	upstreamHostIs := func(what string, claims map[string]string, want string) {
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
	upstreamHostIs("the default forwarded-host-header, X-Forwarded-Host", claims, "xfh.example.net")

	e.write("config.yaml", configMapYAML(map[string]string{"use-forwarded-headers": "true", "forwarded-host-header": "X-Original-Host"}))
	upstreamHostIs("forwarded-host-header X-Original-Host", claims, "orig.example.net")
	upstreamHostIs("without X-Original-Host, the client's own Host", map[string]string{"X-Forwarded-Host": "xfh.example.net"}, "fwd.example.com")

	e.write("config.yaml", configMapYAML(map[string]string{"forwarded-host-header": "X-Original-Host"}))
	upstreamHostIs("use-forwarded-headers off: no header is trusted", claims, "fwd.example.com")
}
