package bench

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestBenchStreamServices reports, from one run: TCP throughput through a
// tcp-services entry of Switchyard against a hand-written NGINX stream
// proxy to the same backend (alternating rounds, same client), and the
// time from an EndpointSlice change of the entry's Service to the first
// new connection served by the new endpoint (Debian has no stream Lua:
// a rewritten stream file and a coalesced reload).
func TestBenchStreamServices(t *testing.T) {
	requireBench(t)
	srcA, srcB := startSource(t, "a"), startSource(t, "b")
	dir := t.TempDir()
	port := harness.FreePort(t)
	setStreamEndpoint := func(p int) {
		harness.WriteFile(t, filepath.Join(dir, "service.yaml"), fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: src, namespace: default}
spec: {ports: [{name: tcp, port: 7000}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: src-1, namespace: default, labels: {kubernetes.io/service-name: src}}
addressType: IPv4
ports: [{name: tcp, port: %d}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
`, p))
	}
	setStreamEndpoint(srcA)
	harness.WriteFile(t, filepath.Join(dir, "tcp.yaml"), fmt.Sprintf(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: tcp, namespace: default}\ndata: {\"%d\": \"default/src:7000\"}\n", port))
	sy := harness.StartSwitchyard(t, dir, "--tcp-services-configmap", "default/tcp")
	waitSource(t, port, "a", time.Minute)
	plainPort := startPlainStream(t, srcA)
	waitSource(t, plainPort, "a", time.Minute)

	const rounds, per, conns = 3, 3 * time.Second, 4
	var syBytes, plainBytes int64
	var syTime, plainTime time.Duration
	for i := 0; i < rounds; i++ {
		b, d := pullBytes(port, conns, per)
		syBytes, syTime = syBytes+b, syTime+d
		b, d = pullBytes(plainPort, conns, per)
		plainBytes, plainTime = plainBytes+b, plainTime+d
	}
	syRate := float64(syBytes) / syTime.Seconds() / (1 << 20)
	plainRate := float64(plainBytes) / plainTime.Seconds() / (1 << 20)

	change := series{name: "endpoint change → new connection on it"}
	for i := 0; i < 12; i++ {
		to, name := srcB, "b"
		if i%2 == 1 {
			to, name = srcA, "a"
		}
		start := time.Now()
		setStreamEndpoint(to)
		waitSource(t, port, name, time.Minute)
		change.samples = append(change.samples, time.Since(start))
	}
	var rep strings.Builder
	fmt.Fprintf(&rep, "\n%s\nTCP services: %d connections, %d alternating rounds of %s each (master %d)\n", strings.Repeat("=", 100),
		conns, rounds, per, sy.MasterPID(t))
	fmt.Fprintf(&rep, "%-36s %8.1f MiB/s\n%-36s %8.1f MiB/s\n", "switchyard (tcp-services entry)", syRate, "plain NGINX stream proxy", plainRate)
	ratioTP := syRate / plainRate
	fmt.Fprintf(&rep, "throughput ratio switchyard / plain: %.2f (target >= 0.95: %s)\n%s\n", ratioTP, met(ratioTP >= 0.95), change)
	t.Log(rep.String())
}

// startSource serves connections with its name on a line, then zeros as
// fast as the client reads them.
func startSource(t *testing.T, name string) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	return harness.ServeConns(t, l, func(c net.Conn) {
		defer c.Close()
		if _, err := fmt.Fprintf(c, "%s\n", name); err != nil {
			return
		}
		for {
			if _, err := c.Write(chunk); err != nil {
				return
			}
		}
	})
}

// firstLine opens a connection and reads the source's name.
func firstLine(port int) (string, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// waitSource polls with new connections every millisecond until the
// source named name answers on port.
func waitSource(t *testing.T, port int, name string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if got, err := firstLine(port); err == nil && got == name {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("port %d not served by %q within %s", port, name, timeout)
}

// pullBytes reads from conns connections to port for d and returns the
// bytes read and the time taken.
func pullBytes(port, conns int, d time.Duration) (int64, time.Duration) {
	var total atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetDeadline(start.Add(d))
			n, _ := io.Copy(io.Discard, c)
			total.Add(n)
		}()
	}
	wg.Wait()
	return total.Load(), time.Since(start)
}

// startPlainStream runs a hand-written NGINX stream proxy to the backend,
// with the same worker count as the harness gives Switchyard.
func startPlainStream(t *testing.T, backend int) int {
	port := harness.FreePort(t)
	harness.RunNginx(t, fmt.Sprintf(`load_module %s/ngx_stream_module.so;
worker_processes %d;
events { worker_connections 1024; }
stream {
    server {
        listen 127.0.0.1:%d reuseport;
        proxy_timeout 600s;
        proxy_pass 127.0.0.1:%d;
    }
}
`, harness.ModulesDir, harness.Workers, port, backend), map[string]string{})
	return port
}
