package integration

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

func shutdownEnv(t *testing.T, settings map[string]string) (*harness.Switchyard, *slowBackend) {
	t.Helper()
	backend, port := startSlowBackend(t)
	dir := t.TempDir()
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "service.yaml"), harness.ServiceYAML("default", "held", port))
	harness.WriteFile(t, filepath.Join(dir, "configmap.yaml"), configMapYAML(settings))
	harness.WriteFile(t, filepath.Join(dir, "ingress.yaml"), harness.IngressYAML("default", "held", "held.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "held"}))
	sy := harness.StartSwitchyard(t, dir, "--configmap", configMapName)
	harness.WaitFor(t, 10*time.Second, "the held backend served", func() error {
		r, err := sy.Get("held.example.com", "/")
		if err == nil && r.Status != 200 {
			err = fmt.Errorf("status %d", r.Status)
		}
		return err
	})
	return sy, backend
}

// TestShutdownDrainsRequestsInFlight: on SIGINT, NGINX stops accepting
// connections at once and finishes the request in flight before it exits.
func TestShutdownDrainsRequestsInFlight(t *testing.T) {
	sy, backend := shutdownEnv(t, map[string]string{"worker-shutdown-timeout": "30s"})
	answer := holdRequest(t, sy, "held.example.com", backend)

	stopped := make(chan struct{})
	go func() { sy.Stop(20 * time.Second); close(stopped) }()
	harness.WaitFor(t, 10*time.Second, "NGINX to stop accepting", func() error {
		c, err := net.DialTimeout("tcp", sy.HTTPAddr, time.Second)
		if err == nil {
			c.Close()
			return fmt.Errorf("%s still accepts connections", sy.HTTPAddr)
		}
		return nil
	})
	select {
	case <-stopped:
		t.Fatal("switchyard exited with a request in flight")
	default:
	}
	close(backend.release)
	if r := <-answer; r.Status != 200 || string(r.Body) != "slow\n" {
		t.Fatalf("the request in flight got %d %q, want 200 slow", r.Status, r.Body)
	}
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("switchyard did not exit after the last request")
	}
}

// TestShutdownHonoursWorkerShutdownTimeout: a request that outlives the
// ConfigMap's worker-shutdown-timeout is cut, and switchyard exits then,
// not when the request would have ended.
func TestShutdownHonoursWorkerShutdownTimeout(t *testing.T) {
	sy, backend := shutdownEnv(t, map[string]string{"worker-shutdown-timeout": "2s"})
	conf, err := os.ReadFile(filepath.Join(sy.Prefix(), "conf", "nginx.conf"))
	if err != nil || !strings.Contains(string(conf), "worker_shutdown_timeout 2s;") {
		t.Fatal("worker-shutdown-timeout 2s is not rendered")
	}
	answer := holdRequest(t, sy, "held.example.com", backend)
	begin := time.Now()
	sy.Stop(20 * time.Second)
	took := time.Since(begin)
	if !sy.Exited() {
		t.Fatal("switchyard did not exit")
	}
	if took < 1500*time.Millisecond || took > 10*time.Second {
		t.Fatalf("switchyard took %v to stop with a request held past worker-shutdown-timeout 2s", took)
	}
	if r := <-answer; r.Status == 200 {
		t.Fatal("the request held past worker-shutdown-timeout completed")
	}
}
