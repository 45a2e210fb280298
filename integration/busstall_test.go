package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/bus/bustest"
	"switchyard.dev/switchyard/integration/harness"
)

// TestStagesWaitForTheBus runs each stage as its own process on an
// external NATS that cannot be reached at start, and later goes away in
// the middle of a run: no stage exits, each says it is not ready while the
// bus is away, NGINX keeps serving the last good configuration, and a
// change made meanwhile is applied once the bus is back.
func TestStagesWaitForTheBus(t *testing.T) {
	harness.Nginx(t)
	ns := harness.StartNATS(t)
	proxy := bustest.StartProxy(t, strings.TrimPrefix(ns.ClientURL(), "nats://"), false)
	procs := newStageProcs(t, "--nats", proxy.URL(), "--nats-keys", ns.Keys)
	stages := map[string]*harness.Process{}
	ready := map[string]string{}
	for _, name := range []string{"applier", "renderer", "annotations", "translator", "watcher"} {
		ready[name] = fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
		stages[name] = procs.start(name, "--profiling-addr", ready[name])
	}
	get := procs.served
	readiness := func(want int) func() error {
		return func() error {
			for name, addr := range ready {
				if stages[name].Exited() {
					t.Fatalf("stage %s exited while the bus was away:\n%s", name, stages[name].Output.String())
				}
				resp, err := http.Get("http://" + addr + "/readyz")
				if err != nil {
					return err
				}
				_ = resp.Body.Close()
				if resp.StatusCode != want {
					return fmt.Errorf("%s: /readyz %d, want %d", name, resp.StatusCode, want)
				}
			}
			return nil
		}
	}

	// At start: the bus cannot be reached.
	harness.WaitFor(t, 30*time.Second, "every stage to say it is not ready", readiness(http.StatusServiceUnavailable))
	time.Sleep(2 * time.Second) // longer than a JetStream request's timeout: no stage gives up
	harness.WaitFor(t, 5*time.Second, "every stage still waiting", readiness(http.StatusServiceUnavailable))
	proxy.SetUp(true)
	harness.WaitFor(t, 60*time.Second, "traffic once the bus is reachable", get("one.example.com"))
	harness.WaitFor(t, 30*time.Second, "every stage ready", readiness(http.StatusOK))

	// Mid-run: the bus goes away while a change is made.
	proxy.SetUp(false)
	harness.WaitFor(t, 30*time.Second, "every stage to say it is not ready", readiness(http.StatusServiceUnavailable))
	procs.ingress("two")
	time.Sleep(2 * time.Second)
	if err := get("one.example.com")(); err != nil {
		t.Fatalf("NGINX stopped serving the last good configuration while the bus was away: %v", err)
	}
	proxy.SetUp(true)
	harness.WaitFor(t, 60*time.Second, "the change made while the bus was away", get("two.example.com"))
	harness.WaitFor(t, 30*time.Second, "every stage ready again", readiness(http.StatusOK))
	if err := get("one.example.com")(); err != nil {
		t.Fatalf("the first Ingress after the bus came back: %v", err)
	}
}
