package bench

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestBenchRequestMetrics compares, in one run, the throughput of two
// Switchyards serving the same Ingress from the same backends, loaded
// alternately by the same client: one counts every request for the
// per-request metrics (--metrics-addr, --enable-metrics by default: the
// log phase of metrics.lua), the other does not (--enable-metrics=false:
// no metrics dict, no log hook). The ratio is the per-request cost of the
// metrics alone; the target is >= 0.95.
func TestBenchRequestMetrics(t *testing.T) {
	requireBench(t)
	f := newFixture(t)
	harness.WriteFile(t, filepath.Join(f.dir, "service.yaml"), harness.ServiceYAML("default", "echo", f.portA, f.portB))
	metricsOn := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	on := harness.StartSwitchyard(t, f.dir, "--log-level", "warn", "--metrics-addr", metricsOn)
	off := harness.StartSwitchyard(t, f.dir, "--log-level", "warn", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
		"--enable-metrics=false")
	waitServed(t, on, f.host, "", 60*time.Second)
	waitServed(t, off, f.host, "", 60*time.Second)

	targets := []benchTarget{
		{name: "metrics off", addr: off.HTTPAddr, master: off.MasterPID(t)},
		{name: "metrics on", addr: on.HTTPAddr, master: on.MasterPID(t)},
	}
	const rounds = 3
	per := 4 * time.Second
	runs := alternate(targets, f.host, rounds, per)
	offRun, onRun := runs[0], runs[1]
	// The counts reach the dict within a second (metrics.lua's flush).
	harness.WaitFor(t, 30*time.Second, "the load counted", func() error {
		if v := scrapeValue(t, metricsOn, "nginx_ingress_controller_requests"); v == "?" {
			return fmt.Errorf("no requests series yet")
		}
		return nil
	})
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nrequest metrics: %d keep-alive clients, %d alternating rounds of %s each\n", strings.Repeat("=", 100),
		overheadClients, rounds, per)
	for i, r := range runs {
		fmt.Fprintf(&rep, "%-28s %s\n", targets[i].name, r)
	}
	throughput := onRun.rps() / offRun.rps()
	fmt.Fprintf(&rep, "throughput ratio metrics on / off: %.2f (target >= 0.95: %s); p99 ratio: %.2f; NGINX CPU per request off / on: %.2f (%.1fµs per request for the metrics)\n",
		throughput, met(throughput >= 0.95), ratio(onRun.quantile(0.99), offRun.quantile(0.99)),
		ratio(offRun.cpuPerRequest(), onRun.cpuPerRequest()), float64((onRun.cpuPerRequest()-offRun.cpuPerRequest()).Nanoseconds())/1e3)
	t.Log(rep.String())
	expectNoFailures(t, targets, runs)
}
