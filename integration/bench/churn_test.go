package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// churnSecondsEnv shortens or lengthens each load phase (default 60 s).
const churnSecondsEnv = "SWITCHYARD_CHURN_SECONDS"

// TestBenchChurn reports, from one run: a steady keep-alive load of 500
// requests/s, first without churn, then while the Service's endpoints change
// every 200 ms (a new pod added, the oldest removed and stopped after a 1 s
// drain) and a new Ingress is added every 2 s. It reports failed requests,
// NGINX reloads and latency for both phases side by side. It fails only if
// a request fails during churn (the design target is zero).
func TestBenchChurn(t *testing.T) {
	requireBench(t)
	bin := harness.Binary(t)
	phase := churnPhase(t)
	dir := t.TempDir()
	pods := newPodPool(t, bin)
	for range 3 {
		pods.add()
	}
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), harness.ClassYAML)
	pods.publish(t, dir)
	const host = "churn.example.com"
	harness.WriteFile(t, filepath.Join(dir, "ingress.yaml"), harness.IngressYAML("default", "churn", host,
		harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
	sy := harness.StartSwitchyard(t, dir, "--log-level", "info")
	waitServed(t, sy, host, "", 30*time.Second)

	quiet := runLoad(t, sy.HTTPAddr, host, 500, phase, nil)
	quiet.elapsed = phase
	reloadsBefore := countReloads(sy)
	churned := runLoad(t, sy.HTTPAddr, host, 500, phase, func(ctx context.Context) churnCounts {
		return churn(ctx, t, dir, pods)
	})
	reloads := countReloads(sy) - reloadsBefore
	churned.elapsed = phase

	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nchurn benchmark: 500 requests/s with keep-alive, %s per phase\n", strings.Repeat("=", 100), phase)
	fmt.Fprintf(&rep, "%-34s %s\n", "without churn", quiet)
	fmt.Fprintf(&rep, "%-34s %s\n", "with churn", churned)
	fmt.Fprintf(&rep, "churn: %d endpoint changes, %d Ingresses added, %d NGINX reloads\n",
		churned.churn.endpointChanges, churned.churn.ingresses, reloads)
	fmt.Fprintf(&rep, "latency with churn / without: p50 %.2fx, p99 %.2fx\n",
		ratio(churned.quantile(0.5), quiet.quantile(0.5)), ratio(churned.quantile(0.99), quiet.quantile(0.99)))
	fmt.Fprintf(&rep, "target: 0 failed requests under churn: %s\n", met(churned.failed == 0))
	if len(churned.failures) > 0 {
		fmt.Fprintf(&rep, "first failures: %s\n", strings.Join(churned.failures, "; "))
	}
	t.Log(rep.String())
	if churned.failed > 0 {
		t.Errorf("%d requests failed under churn", churned.failed)
	}
}

func churnPhase(t *testing.T) time.Duration {
	phase := 60 * time.Second
	if v := os.Getenv(churnSecondsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number of seconds", churnSecondsEnv, v)
		}
		phase = time.Duration(n) * time.Second
	}
	return phase
}

// churnCounts is what the churn did.
type churnCounts struct {
	endpointChanges, ingresses int
}

// churn changes the endpoints every 200 ms and adds an Ingress every 2 s
// until ctx ends.
func churn(ctx context.Context, t *testing.T, dir string, pods *podPool) churnCounts {
	var counts churnCounts
	endpoints := time.NewTicker(200 * time.Millisecond)
	defer endpoints.Stop()
	ingresses := time.NewTicker(2 * time.Second)
	defer ingresses.Stop()
	for {
		select {
		case <-ctx.Done():
			pods.stopRemoved()
			return counts
		case <-endpoints.C:
			pods.add()
			pods.removeOldest(time.Second)
			pods.publish(t, dir)
			counts.endpointChanges++
		case <-ingresses.C:
			name := fmt.Sprintf("added-%d", counts.ingresses)
			harness.WriteFile(t, filepath.Join(dir, name+".yaml"), harness.IngressYAML("default", name, name+".example.com",
				harness.Path{Path: "/", Type: "Prefix", Service: "echo"}))
			counts.ingresses++
		}
	}
}

// podPool runs echo pods: the active ones are the Service's endpoints; a
// removed one keeps answering for its drain time (NGINX may still hold
// connections to it) and is then stopped, as a terminating pod would be.
type podPool struct {
	t       *testing.T
	bin     string
	next    int
	active  []*pod
	mu      sync.Mutex
	removed []*pod
}

type pod struct {
	port    int
	process *harness.Process
	stopAt  time.Time
}

func newPodPool(t *testing.T, bin string) *podPool { return &podPool{t: t, bin: bin} }

func (p *podPool) add() {
	p.next++
	port := harness.FreePort(p.t)
	proc := harness.Start(p.t, p.bin, "echo", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--service", "echo",
		"--pod", fmt.Sprintf("pod-%d", p.next))
	harness.WaitFor(p.t, 10*time.Second, "echo pod", func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", port))
		if err == nil {
			resp.Body.Close()
		}
		return err
	})
	p.active = append(p.active, &pod{port: port, process: proc})
	p.stopRemoved()
}

func (p *podPool) removeOldest(drain time.Duration) {
	old := p.active[0]
	p.active = p.active[1:]
	old.stopAt = time.Now().Add(drain)
	p.removed = append(p.removed, old)
}

// stopRemoved stops the removed pods whose drain time is over.
func (p *podPool) stopRemoved() {
	kept := p.removed[:0]
	for _, old := range p.removed {
		if time.Now().Before(old.stopAt) {
			kept = append(kept, old)
			continue
		}
		old.process.Stop(5 * time.Second)
	}
	p.removed = kept
}

func (p *podPool) publish(t *testing.T, dir string) {
	ports := make([]int, len(p.active))
	for i, a := range p.active {
		ports[i] = a.port
	}
	harness.WriteFile(t, filepath.Join(dir, "service.yaml"), harness.ServiceYAML("default", "echo", ports...))
}

// loadResult is one load phase.
type loadResult struct {
	series
	sent, failed int
	late         int // ticks skipped because every client was busy
	failures     []string
	elapsed      time.Duration
	churn        churnCounts
}

func (r loadResult) String() string {
	return fmt.Sprintf("sent=%d (%.0f/s) failed=%d late=%d median=%s p99=%s max=%s", r.sent, float64(r.sent)/r.elapsed.Seconds(), r.failed, r.late,
		r.quantile(0.5).Round(10*time.Microsecond), r.quantile(0.99).Round(10*time.Microsecond), r.quantile(1).Round(10*time.Microsecond))
}

// runLoad sends rate requests/s for d through a pool of keep-alive
// connections and, when background is set, runs it alongside.
func runLoad(t *testing.T, addr, host string, rate int, d time.Duration, background func(context.Context) churnCounts) loadResult {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64}}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var bg sync.WaitGroup
	var counts churnCounts
	if background != nil {
		bg.Add(1)
		go func() { defer bg.Done(); counts = background(ctx) }()
	}
	res := loadResult{series: series{name: "load"}}
	var mu sync.Mutex
	slots := make(chan struct{}, 64)
	var inflight sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
		select {
		case slots <- struct{}{}:
		default:
			res.late++
			continue
		}
		inflight.Add(1)
		go func() {
			defer func() { <-slots; inflight.Done() }()
			begin := time.Now()
			err := getOnce(client, addr, host)
			took := time.Since(begin)
			mu.Lock()
			defer mu.Unlock()
			res.sent++
			if err != nil {
				res.failed++
				if len(res.failures) < 5 {
					res.failures = append(res.failures, fmt.Sprintf("%s: %v", begin.Format("15:04:05.000"), err))
				}
				return
			}
			res.samples = append(res.samples, took)
		}()
	}
	inflight.Wait()
	bg.Wait()
	res.churn = counts
	if len(res.samples) == 0 {
		t.Fatalf("no request succeeded: %v", res.failures)
	}
	return res
}

func getOnce(client *http.Client, addr, host string) error {
	return getWithOrigin(client, addr, host, "")
}

// getWithOrigin is getOnce with an Origin header, as a browser sends to a
// CORS-enabled host ("" sends none).
func getWithOrigin(client *http.Client, addr, host, origin string) error {
	req, err := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return err
	}
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

// countReloads counts the applier's reloads in switchyard's log.
func countReloads(sy *harness.Switchyard) int {
	return strings.Count(sy.Output.String(), `"reloaded": true`)
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// TestBenchEndpointAllWorkers reports the time from an EndpointSlice change
// to every NGINX worker sending traffic to the new endpoint: after the
// change, fresh connections (each may land on any worker) are sent until 20
// in a row reach the new pod.
func TestBenchEndpointAllWorkers(t *testing.T) {
	requireBench(t)
	f := newFixture(t)
	sy := harness.StartSwitchyard(t, f.dir, "--log-level", "warn")
	waitServed(t, sy, f.host, "pod-a", 30*time.Second)
	all := series{name: "EndpointSlice change to all workers on it"}
	for i := range 40 {
		port, pod := f.portB, "pod-b"
		if i%2 == 1 {
			port, pod = f.portA, "pod-a"
		}
		begin := time.Now()
		f.setEndpoint(t, port)
		streak := 0
		var done time.Time
		for deadline := begin.Add(10 * time.Second); streak < 20; {
			if time.Now().After(deadline) {
				t.Fatalf("change %d: not all workers on %s within 10s", i, pod)
			}
			r, err := sy.Get(f.host, "/")
			if err == nil && r.Status == 200 && r.Echo != nil && r.Echo.Pod == pod {
				if streak == 0 {
					done = time.Now()
				}
				streak++
			} else {
				streak = 0
			}
		}
		all.samples = append(all.samples, done.Sub(begin))
	}
	t.Logf("\n%s\n%s\ntarget p99 <= 250ms: %s", strings.Repeat("=", 100), all, met(all.quantile(0.99) <= 250*time.Millisecond))
}
