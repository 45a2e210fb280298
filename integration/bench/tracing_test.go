package bench

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestBenchRequestTracing compares, in one run of one Switchyard, the
// throughput of a host whose Ingress traces every request
// (enable-opentelemetry, otel-sampler AlwaysOn: a span recorded in Lua
// per request, drained and exported over OTLP by the controller) with a
// host without tracing, loaded alternately by the same client. The
// queue is as large as otel-max-queuesize allows and drained every
// 100 ms, so spans are exported rather than dropped; the report says how
// many were exported and dropped.
func TestBenchRequestTracing(t *testing.T) {
	requireBench(t)
	counter := harness.StartSpanCounter(t)
	host, port, _ := net.SplitHostPort(counter.Addr)
	f := newFixture(t)
	harness.WriteFile(t, filepath.Join(f.dir, "service.yaml"), harness.ServiceYAML("default", "echo", f.portA, f.portB))
	const traced = "traced.bench.example.com"
	harness.WriteFile(t, filepath.Join(f.dir, "traced.yaml"), harness.AnnotatedIngressYAML("default", "traced", traced,
		map[string]string{"nginx.ingress.kubernetes.io/enable-opentelemetry": "true"}, harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	harness.WriteFile(t, filepath.Join(f.dir, "config.yaml"), fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: switchyard, namespace: switchyard-system}
data:
  otlp-collector-host: %q
  otlp-collector-port: %q
  otel-sampler: AlwaysOn
  otel-max-queuesize: "16384"
  otel-max-export-batch-size: "4096"
  otel-schedule-delay-millis: "100"
`, host, port))
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	sy := harness.StartSwitchyard(t, f.dir, "--log-level", "warn", "--metrics-addr", metricsAddr, "--configmap", "switchyard-system/switchyard")
	waitServed(t, sy, f.host, "", 60*time.Second)
	waitServed(t, sy, traced, "", 60*time.Second)
	harness.WaitFor(t, 60*time.Second, "a first span exported", func() error {
		if _, err := sy.Get(traced, "/"); err != nil {
			return err
		}
		if counter.Spans() == 0 {
			return fmt.Errorf("no span yet")
		}
		return nil
	})

	master := sy.MasterPID(t)
	targets := []benchTarget{
		{name: "tracing off", addr: sy.HTTPAddr, master: master, host: f.host},
		{name: "tracing on, 100% sampled", addr: sy.HTTPAddr, master: master, host: traced},
	}
	const rounds = 3
	per := 4 * time.Second
	before := counter.Spans()
	controllerBefore := processCPU(sy.Cmd.Process.Pid)
	runs := alternate(targets, f.host, rounds, per)
	off, on := runs[0], runs[1]
	// What the controller drains after the load: every span it could keep.
	time.Sleep(time.Second)
	exported := counter.Spans() - before
	// The controller's CPU is all for the spans: it drains and exports
	// them (the untraced host costs it nothing).
	var controllerPerSpan time.Duration
	if exported > 0 {
		controllerPerSpan = (processCPU(sy.Cmd.Process.Pid) - controllerBefore) / time.Duration(exported)
	}
	dropped := scrapeValue(t, metricsAddr, "switchyard_request_spans_dropped_total")
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nrequest tracing: %d keep-alive clients, %d alternating rounds of %s each\n", strings.Repeat("=", 100),
		overheadClients, rounds, per)
	for i, r := range runs {
		fmt.Fprintf(&rep, "%-28s %s\n", targets[i].name, r)
	}
	fmt.Fprintf(&rep, "throughput ratio tracing on / off: %.2f; p99 ratio: %.2f; NGINX CPU per request off / on: %.2f\n",
		on.rps()/off.rps(), ratio(on.quantile(0.99), off.quantile(0.99)), ratio(off.cpuPerRequest(), on.cpuPerRequest()))
	fmt.Fprintf(&rep, "NGINX CPU per request for tracing: %.1fµs; controller CPU per exported span (drain and OTLP export): %.1fµs\n",
		float64((on.cpuPerRequest()-off.cpuPerRequest()).Nanoseconds())/1e3, float64(controllerPerSpan.Nanoseconds())/1e3)
	fmt.Fprintf(&rep, "spans exported during the load: %d (traced requests: %d); dropped since start: %s\n",
		exported, len(on.samples), dropped)
	t.Log(rep.String())
	expectNoFailures(t, targets, runs)
	if exported == 0 {
		t.Error("no span exported during the load")
	}
}

// scrapeValue is the value of the first series of name on /metrics at
// addr, as text ("?" when it cannot be read).
func scrapeValue(t *testing.T, addr, name string) string {
	t.Helper()
	v, err := firstSample(addr, name)
	if err != nil {
		t.Logf("scrape: %v", err)
		return "?"
	}
	return v
}

// firstSample is the value of the first series of name on /metrics at
// addr, as text; an error when there is none.
func firstSample(addr, name string) (string, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return "", fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	scanner := bufio.NewScanner(resp.Body)
	scanner.Buffer(make([]byte, 64*1024), 1<<20)
	for scanner.Scan() {
		line := scanner.Text()
		if strings.HasPrefix(line, name+"{") || strings.HasPrefix(line, name+" ") {
			return line[strings.LastIndexByte(line, ' ')+1:], nil
		}
	}
	if err := scanner.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("no %s on %s", name, addr)
}
