package integration

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestShutdownGracePeriod: with ingress-nginx's --shutdown-grace-period,
// a SIGTERM first makes /readyz answer 503 while NGINX goes on serving
// (load balancers take the pod out), and only after the period does the
// controller drain and exit; --healthz-port, ignored, does not stop it.
func TestShutdownGracePeriod(t *testing.T) {
	const period = 4 * time.Second
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("grace", nil))
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	e.sy = harness.StartSwitchyard(t, e.dir, "--metrics-addr", addr, "--shutdown-grace-period=4", "--healthz-port=10254")
	readyz := func() int {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	harness.WaitFor(t, changeTimeout, "ready", func() error {
		if code := readyz(); code != 200 {
			return fmt.Errorf("/readyz %d", code)
		}
		return nil
	})
	e.eventually("grace.example.com", "/", "served", status(200))
	signalled := time.Now()
	if err := e.sy.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, period/2, "/readyz 503 after SIGTERM", func() error {
		if code := readyz(); code != 503 {
			return fmt.Errorf("/readyz %d", code)
		}
		return nil
	})
	if r := e.getWith("grace.example.com", "/", nil); r.Status != 200 {
		t.Errorf("during the grace period: %d, want 200", r.Status)
	}
	if e.sy.Exited() {
		t.Fatal("exited within the grace period")
	}
	harness.WaitFor(t, period+30*time.Second, "the controller to exit", func() error {
		if !e.sy.Exited() {
			return errors.New("still running")
		}
		return nil
	})
	if took := time.Since(signalled); took < period {
		t.Errorf("exited %s after SIGTERM, before the grace period of %s", took, period)
	}
	if out := e.sy.Output.String(); !strings.Contains(out, "--healthz-port=10254 is ignored") {
		t.Error("the ignored flag was not reported")
	}
}
