package integration

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// stageProcs is a manifests directory served by stages run as separate
// processes on an external bus: one echo backend (pod a-1 of echo-a), the
// Ingress "one" to it, and the flags every stage shares.
type stageProcs struct {
	t        *testing.T
	bin      string
	dir      string
	httpAddr string
	// common are the flags of every stage: the bus's, then the
	// manifests, state dir and listen addresses.
	common []string
	client *http.Client
}

// newStageProcs writes the manifests; busFlags say which bus the stages
// use (--nats URL, --nats-keys DIR, ...).
func newStageProcs(t *testing.T, busFlags ...string) *stageProcs {
	t.Helper()
	s := &stageProcs{t: t, bin: harness.Binary(t), dir: t.TempDir(), client: harness.NewClient()}
	port := harness.StartEcho(t, s.bin, "echo-a", "a-1")
	harness.WriteFile(t, filepath.Join(s.dir, "class.yaml"), harness.ClassYAML)
	harness.WriteFile(t, filepath.Join(s.dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", port))
	s.ingress("one")
	s.httpAddr = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	s.common = append(busFlags, "--manifests", s.dir, "--state-dir", harness.StateDir(t),
		"--http-addr", s.httpAddr, "--https-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)), "--worker-processes", "1")
	return s
}

// ingress adds the Ingress name for host name.example.com to echo-a.
func (s *stageProcs) ingress(name string) {
	harness.WriteFile(s.t, filepath.Join(s.dir, name+".yaml"), harness.IngressYAML("default", name, name+".example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
}

// start runs `switchyard stage NAME` with the common flags and extra
// ones, which win over a common one they repeat.
func (s *stageProcs) start(stage string, extra ...string) *harness.Process {
	return harness.Start(s.t, s.bin, append(append([]string{"stage", stage}, s.common...), extra...)...)
}

// served checks that NGINX answers for host from the echo backend.
func (s *stageProcs) served(host string) func() error {
	return func() error {
		r, err := harness.Do(s.client, "GET", "http://"+s.httpAddr+"/", host, nil)
		if err == nil && !servedBy("a-1")(r) {
			err = fmt.Errorf("status %d", r.Status)
		}
		return err
	}
}
