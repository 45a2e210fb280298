package bench

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestBenchMetricsScrape reports how long a Prometheus scrape of
// --metrics-addr takes with 1,000 Ingresses that all had traffic: each
// has its own host, gets requests of two methods, so NGINX holds per
// request series of every Ingress, and each scrape reads them from the
// Lua dict through the configuration endpoint and aggregates them.
func TestBenchMetricsScrape(t *testing.T) {
	requireBench(t)
	const ingresses = 1000
	f := newFixture(t)
	harness.WriteFile(t, filepath.Join(f.dir, "service.yaml"), harness.ServiceYAML("default", "echo", f.portA, f.portB))
	var b strings.Builder
	for i := range ingresses {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.WriteString(harness.IngressYAML("default", fmt.Sprintf("app-%d", i), fmt.Sprintf("app-%d.bench.example.com", i),
			harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	}
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	sy := harness.StartSwitchyard(t, f.dir, "--log-level", "warn", "--metrics-addr", metricsAddr)
	// Added once Switchyard serves: its start-up wait is for one Ingress.
	harness.WriteFile(t, filepath.Join(f.dir, "ingresses.yaml"), b.String())
	waitServed(t, sy, fmt.Sprintf("app-%d.bench.example.com", ingresses-1), "", 300*time.Second)

	client := harness.NewClient()
	for i := range ingresses {
		host := fmt.Sprintf("app-%d.bench.example.com", i)
		for _, method := range []string{http.MethodGet, http.MethodHead} {
			if r, err := harness.Do(client, method, "http://"+sy.HTTPAddr+"/", host, nil); err != nil || r.Status != 200 {
				t.Fatalf("%s %s: %v %v", method, host, r.Status, err)
			}
		}
	}
	// NGINX adds its counts to the dict every second: wait until every
	// Ingress's series is there.
	var seriesCount int
	harness.WaitFor(t, 60*time.Second, "the requests series of every Ingress", func() error {
		_, lines, err := scrape(metricsAddr, "nginx_ingress_controller_requests{")
		seriesCount = lines
		if err != nil {
			return err
		}
		if lines < 2*ingresses {
			return fmt.Errorf("%d requests series", lines)
		}
		return nil
	})

	times := series{name: "scrape of /metrics"}
	var size int
	const scrapes = 20
	master := sy.MasterPID(t)
	controllerBefore, nginxBefore := processCPU(sy.Cmd.Process.Pid), workersCPU(master)
	for range scrapes {
		start := time.Now()
		n, _, err := scrape(metricsAddr, "")
		if err != nil {
			t.Fatal(err)
		}
		times.samples = append(times.samples, time.Since(start))
		size = n
	}
	// CPU time is steadier than wall time on a shared machine.
	controllerCPU := (processCPU(sy.Cmd.Process.Pid) - controllerBefore) / scrapes
	nginxCPU := (workersCPU(master) - nginxBefore) / scrapes
	t.Logf("\n%s\nmetrics scrape: %d Ingresses with traffic, %d requests series, %d KiB per scrape\n%s\nCPU per scrape: controller %s, NGINX workers %s\n",
		strings.Repeat("=", 100), ingresses, seriesCount, size/1024, times, controllerCPU.Round(time.Millisecond), nginxCPU.Round(time.Millisecond))
}

// scrape GETs /metrics and returns its size and how many lines start with
// prefix.
func scrape(addr, prefix string) (size, lines int, err error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	if prefix == "" {
		n, err := io.Copy(io.Discard, resp.Body)
		return int(n), 0, err
	}
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 64*1024), 1<<20)
	for scanner.Scan() {
		size += len(scanner.Bytes()) + 1
		if strings.HasPrefix(scanner.Text(), prefix) {
			lines++
		}
	}
	return size, lines, scanner.Err()
}
