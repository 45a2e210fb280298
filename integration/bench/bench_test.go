// Package bench measures Switchyard end to end with the real binary, NGINX
// and echo backends. `make bench` runs it; `go test ./...` skips it, because
// timings on a shared 2-core machine are measurements, not pass/fail tests.
// Every number is printed with the others from the same run, so ratios
// between them are meaningful even when absolute times are noisy.
package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

const enableEnv = "SWITCHYARD_BENCH"

func requireBench(t *testing.T) {
	if os.Getenv(enableEnv) == "" {
		t.Skipf("set %s=1 (make bench) to run benchmarks", enableEnv)
	}
	if testing.Short() {
		t.Skip("benchmarks do not run with -short")
	}
}

type fixture struct {
	dir              string
	portA, portB     int
	podA, podB, host string
}

func newFixture(t *testing.T) *fixture {
	bin := harness.Binary(t)
	f := &fixture{dir: t.TempDir(), host: "bench.example.com"}
	f.portA = harness.StartEcho(t, bin, "echo", "pod-a")
	f.portB = harness.StartEcho(t, bin, "echo", "pod-b")
	harness.WriteFile(t, filepath.Join(f.dir, "class.yaml"), harness.ClassYAML)
	f.setEndpoint(t, f.portA)
	harness.WriteFile(t, filepath.Join(f.dir, "ingress.yaml"), harness.IngressYAML("default", "bench", f.host,
		harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	return f
}

func (f *fixture) setEndpoint(t *testing.T, port int) {
	harness.WriteFile(t, filepath.Join(f.dir, "service.yaml"), harness.ServiceYAML("default", "echo", port))
}

// waitServed polls with fresh connections every millisecond until the
// request is answered by pod, and returns when that happened.
func waitServed(t *testing.T, sy *harness.Switchyard, host, pod string, timeout time.Duration) time.Time {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		r, err := sy.Get(host, "/")
		if err == nil && r.Status == 200 && (pod == "" || (r.Echo != nil && r.Echo.Pod == pod)) {
			return time.Now()
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%s not served by %q within %s", host, pod, timeout)
	return time.Time{}
}

type series struct {
	name    string
	samples []time.Duration
}

func (s series) quantile(q float64) time.Duration {
	sorted := slices.Clone(s.samples)
	slices.Sort(sorted)
	idx := int(q*float64(len(sorted)-1) + 0.5)
	return sorted[idx]
}

func (s series) String() string {
	return fmt.Sprintf("%-42s n=%-3d median=%-9s p99=%-9s max=%s", s.name, len(s.samples),
		s.quantile(0.5).Round(100*time.Microsecond), s.quantile(0.99).Round(100*time.Microsecond),
		s.quantile(1).Round(100*time.Microsecond))
}

// TestBenchPipeline reports, from one run: time from start to first request
// served, EndpointSlice change to traffic on the new endpoint (no reload),
// and new Ingress file to its first 200 (a reload).
func TestBenchPipeline(t *testing.T) {
	requireBench(t)
	harness.Nginx(t)
	harness.Binary(t)

	startup := series{name: "start to first request served"}
	for i := 0; i < 5; i++ {
		f := newFixture(t)
		begin := time.Now()
		sy := harness.StartSwitchyard(t, f.dir, "--log-level", "warn")
		startup.samples = append(startup.samples, waitServed(t, sy, f.host, "pod-a", 30*time.Second).Sub(begin))
		sy.Stop(20 * time.Second)
	}

	f := newFixture(t)
	sy := harness.StartSwitchyard(t, f.dir, "--log-level", "warn")
	waitServed(t, sy, f.host, "pod-a", 30*time.Second)
	workers := sy.WorkerPIDs(t)

	endpoint := series{name: "EndpointSlice change to traffic on it"}
	for i := 0; i < 50; i++ {
		port, pod := f.portB, "pod-b"
		if i%2 == 1 {
			port, pod = f.portA, "pod-a"
		}
		begin := time.Now()
		f.setEndpoint(t, port)
		endpoint.samples = append(endpoint.samples, waitServed(t, sy, f.host, pod, 10*time.Second).Sub(begin))
	}
	reloadsDuringEndpointChanges := !slices.Equal(sortedInts(workers), sortedInts(sy.WorkerPIDs(t)))

	newIngress := series{name: "new Ingress file to its first 200"}
	for i := 0; i < 20; i++ {
		host := fmt.Sprintf("new-%d.example.com", i)
		begin := time.Now()
		harness.WriteFile(t, filepath.Join(f.dir, fmt.Sprintf("new-%d.yaml", i)), harness.IngressYAML("default", fmt.Sprintf("new-%d", i), host,
			harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
		newIngress.samples = append(newIngress.samples, waitServed(t, sy, host, "", 10*time.Second).Sub(begin))
	}

	var report strings.Builder
	fmt.Fprintf(&report, "\n%s\n", strings.Repeat("=", 100))
	for _, s := range []series{startup, endpoint, newIngress} {
		fmt.Fprintln(&report, s)
	}
	if testing.Verbose() {
		fmt.Fprintf(&report, "endpoint samples: %v\nnew Ingress samples: %v\n", round(endpoint.samples), round(newIngress.samples))
	}
	fmt.Fprintf(&report, "ratio new-Ingress p99 / endpoint-change p99: %.1fx (the reload path against the Lua path)\n",
		float64(newIngress.quantile(0.99))/float64(endpoint.quantile(0.99)))
	fmt.Fprintf(&report, "NGINX reloaded during the 50 endpoint changes: %v\n", reloadsDuringEndpointChanges)
	fmt.Fprintf(&report, "targets: endpoint change p99 <= 250ms (%v), new Ingress p99 <= 1s (%v)\n",
		endpoint.quantile(0.99) <= 250*time.Millisecond, newIngress.quantile(0.99) <= time.Second)
	t.Log(report.String())
	if reloadsDuringEndpointChanges {
		t.Error("an endpoint change reloaded NGINX")
	}
}

func round(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func sortedInts(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
