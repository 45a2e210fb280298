package integration

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// TestMetricsEndpoint: a running Switchyard with --metrics-addr answers
// /healthz and /readyz, and its /metrics show the first configuration as
// applied, under ingress-nginx's names.
func TestMetricsEndpoint(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("metrics", nil))
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	e.sy = harness.StartSwitchyard(t, e.dir, "--metrics-addr", addr)
	get := func(path string) (int, string, error) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	harness.WaitFor(t, changeTimeout, "ready, with the first configuration applied in the metrics", func() error {
		for _, path := range []string{"/healthz", "/readyz"} {
			if code, body, err := get(path); err != nil || code != 200 {
				return fmt.Errorf("%s: %d %q %v", path, code, body, err)
			}
		}
		_, body, err := get("/metrics")
		if err != nil {
			return err
		}
		for _, want := range []string{"nginx_ingress_controller_config_last_reload_successful{", "nginx_ingress_controller_build_info{"} {
			if !strings.Contains(body, want) {
				return fmt.Errorf("no %s in /metrics", want)
			}
		}
		if !strings.Contains(body, `nginx_ingress_controller_config_last_reload_successful{controller_class="switchyard",controller_namespace="default",controller_pod=""} 1`) {
			return fmt.Errorf("last reload not reported successful")
		}
		return nil
	})
}
