package integration

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// annotatedIngressYAML is harness.IngressYAML with annotations.
// limitedIngressYAML is an Ingress with annotations under the default
// prefix, given without it.
func limitedIngressYAML(ns, name, host string, annotations map[string]string, paths ...harness.Path) string {
	full := make(map[string]string, len(annotations))
	for k, v := range annotations {
		full["nginx.ingress.kubernetes.io/"+k] = v
	}
	return harness.AnnotatedIngressYAML(ns, name, host, full, paths...)
}

// bigSize is the body /big answers with: 300 KB, 3 s at limit-rate 100.
const bigSize = 300 * 1024

// slowBackend answers /big with bigSize bytes and holds /slow until
// released, so a test can keep a request in flight; anything else is 200.
type slowBackend struct {
	entered chan struct{}
	release chan struct{}
}

func startSlowBackend(t *testing.T) (*slowBackend, int) {
	t.Helper()
	b := &slowBackend{entered: make(chan struct{}, 16), release: make(chan struct{})}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: b, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	return b, l.Addr().(*net.TCPAddr).Port
}

func (b *slowBackend) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/big":
		w.Header().Set("Content-Length", fmt.Sprint(bigSize))
		_, _ = w.Write(make([]byte, bigSize))
	case "/slow":
		b.entered <- struct{}{}
		select {
		case <-b.release:
		case <-time.After(15 * time.Second):
		}
		_, _ = io.WriteString(w, "slow\n")
	default:
		_, _ = io.WriteString(w, "ok\n")
	}
}

// holdRequest sends GET /slow to host in the background and returns once
// the backend holds it; the answer comes on the channel when released.
func holdRequest(t *testing.T, sy *harness.Switchyard, host string, b *slowBackend) <-chan harness.Response {
	t.Helper()
	answer := make(chan harness.Response, 1)
	go func() {
		r, err := harness.Do(harness.NewClient(), http.MethodGet, "http://"+sy.HTTPAddr+"/slow", host, nil)
		if err != nil {
			r.Status = -1
		}
		answer <- r
	}()
	select {
	case <-b.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the request never reached the backend")
	}
	return answer
}

// burstStatuses sends n requests back to back, each on a new connection,
// and counts the statuses.
func burstStatuses(t *testing.T, sy *harness.Switchyard, host string, n int) map[int]int {
	t.Helper()
	counts := map[int]int{}
	for range n {
		r, err := sy.Get(host, "/")
		if err != nil {
			t.Fatalf("%s: %v", host, err)
		}
		counts[r.Status]++
	}
	return counts
}

// TestRateLimitAnnotations runs the limit-* annotations through the real
// pipeline and NGINX: what a client of each Ingress sees.
func TestRateLimitAnnotations(t *testing.T) {
	bin := harness.Binary(t)
	dir := t.TempDir()
	write := func(name, content string) { harness.WriteFile(t, filepath.Join(dir, name), content) }
	echo := harness.StartEcho(t, bin, "echo-a", "a-1")
	backend, slowPort := startSlowBackend(t)
	write("class.yaml", harness.ClassYAML)
	write("services.yaml", harness.ServiceYAML("default", "echo-a", echo)+"---\n"+harness.ServiceYAML("default", "slow", slowPort))
	// limit-req-status-code from the ConfigMap; limit-conn-status-code
	// keeps its default 503, so the two limits are told apart.
	write("configmap.yaml", configMapYAML(map[string]string{"limit-req-status-code": "429"}))
	root := func(svc string) harness.Path { return harness.Path{Path: "/", Type: "Prefix", Service: svc} }
	limited := limitedIngressYAML("default", "limited", "limited.example.com",
		map[string]string{"limit-rps": "1", "limit-burst-multiplier": "1"}, root("echo-a"))
	write("limited.yaml", limited)
	write("free.yaml", limitedIngressYAML("default", "free", "free.example.com", nil, root("echo-a")))
	write("allowed.yaml", limitedIngressYAML("default", "allowed", "allowed.example.com",
		// The alias of limit-allowlist, as older manifests spell it.
		map[string]string{"limit-rps": "1", "limit-burst-multiplier": "1", "limit-whitelist": "10.0.0.0/8, 127.0.0.1"}, root("echo-a")))
	write("conn.yaml", limitedIngressYAML("default", "conn", "conn.example.com",
		map[string]string{"limit-connections": "1"}, root("slow")))
	write("rate.yaml", limitedIngressYAML("default", "rate", "rate.example.com",
		map[string]string{"limit-rate": "100"}, root("slow")))
	write("bad.yaml", limitedIngressYAML("default", "bad", "bad.example.com",
		map[string]string{"limit-connections": "70000"}, root("echo-a")))
	sy := harness.StartSwitchyard(t, dir, "--configmap", configMapName)
	e := &env{t: t, dir: dir, sy: sy}
	for _, host := range []string{"limited.example.com", "free.example.com", "allowed.example.com"} {
		e.eventually(host, "/", host, servedBy("a-1"))
	}
	e.eventually("conn.example.com", "/", "conn.example.com", status(200))
	e.eventually("rate.example.com", "/", "rate.example.com", status(200))

	t.Run("rps", func(t *testing.T) {
		time.Sleep(2 * time.Second) // let the probes' excess drain
		got := burstStatuses(t, sy, "limited.example.com", 10)
		if got[429] == 0 || got[200] == 0 || got[200]+got[429] != 10 {
			t.Errorf("limit-rps 1, burst 1: 10 quick requests gave %v, want some 200 and some 429 (limit-req-status-code)", got)
		}
		if got := burstStatuses(t, sy, "free.example.com", 10); got[200] != 10 {
			t.Errorf("an Ingress without limits gave %v, want 10 × 200", got)
		}
	})

	t.Run("allowlist", func(t *testing.T) {
		if got := burstStatuses(t, sy, "allowed.example.com", 10); got[200] != 10 {
			t.Errorf("127.0.0.1 is in limit-whitelist, yet 10 quick requests gave %v", got)
		}
	})

	t.Run("connections", func(t *testing.T) {
		first := holdRequest(t, sy, "conn.example.com", backend)
		second, err := sy.Get("conn.example.com", "/")
		close(backend.release)
		if err != nil {
			t.Fatal(err)
		}
		if second.Status != 503 {
			t.Errorf("limit-connections 1: a second request while one is in flight gave %d, want 503", second.Status)
		}
		if r := <-first; r.Status != 200 {
			t.Errorf("the request in flight gave %d, want 200", r.Status)
		}
		// NGINX releases the connection slot when it finalizes the first
		// request, which may be a moment after the client has its answer.
		harness.WaitFor(t, 5*time.Second, "a 200 after the first request ended", func() error {
			r, err := sy.Get("conn.example.com", "/")
			if err == nil && r.Status != 200 {
				err = fmt.Errorf("status %d", r.Status)
			}
			return err
		})
	})

	t.Run("rate", func(t *testing.T) {
		conf := readServerConf(t, sy, "rate.example.com")
		if !strings.Contains(conf, "limit_rate 100k;") || !strings.Contains(conf, "proxy_buffering on;") {
			t.Fatalf("limit-rate 100 is not rendered as limit_rate 100k:\n%s", conf)
		}
		start := time.Now()
		r, err := harness.Do(harness.NewClient(), http.MethodGet, "http://"+sy.HTTPAddr+"/big", "rate.example.com", nil)
		elapsed := time.Since(start)
		if err != nil || r.Status != 200 || len(r.Body) != bigSize {
			t.Fatalf("GET /big: %v, status %d, %d bytes", err, r.Status, len(r.Body))
		}
		// 300 KB at 100 KB/s is about 3 s; half of it leaves room for
		// NGINX's rounding and socket buffers, and an unlimited transfer
		// on loopback takes milliseconds.
		if elapsed < 1500*time.Millisecond {
			t.Errorf("300 KB at limit-rate 100 (KB/s) took %v, want over 1.5 s", elapsed)
		}
	})

	t.Run("invalid", func(t *testing.T) {
		// limit-connections above NGINX's 65535 rejects the Ingress: none
		// of its paths is served (the problem goes to the Ingress's Events,
		// which a manifests directory does not have).
		e.expect("bad.example.com", "/", 404, "")
	})

	t.Run("removed", func(t *testing.T) {
		// Without the annotations the zones go (http.d/zones.conf is
		// rendered again) and the Ingress is no longer limited.
		write("limited.yaml", limitedIngressYAML("default", "limited", "limited.example.com", nil, root("echo-a")))
		harness.WaitFor(t, changeTimeout, "limited.example.com without limits", func() error {
			if conf := readServerConf(t, sy, "limited.example.com"); strings.Contains(conf, "limit_req") {
				return fmt.Errorf("still rendered with limit_req")
			}
			return nil
		})
		// The reload follows the swap of the files: poll until the new
		// workers answer every request of a quick burst.
		harness.WaitFor(t, changeTimeout, "10 quick requests all served", func() error {
			if got := burstStatuses(t, sy, "limited.example.com", 10); got[200] != 10 {
				return fmt.Errorf("after removing limit-rps, 10 quick requests gave %v", got)
			}
			return nil
		})
		zones, err := os.ReadFile(filepath.Join(sy.Prefix(), "conf", "http.d", "zones.conf"))
		if err != nil || strings.Contains(string(zones), "default_limited") || !strings.Contains(string(zones), "default_allowed") {
			t.Errorf("zones.conf after the change (%v):\n%s", err, zones)
		}
	})
}

// readServerConf reads the live server file of host from NGINX's prefix.
func readServerConf(t *testing.T, sy *harness.Switchyard, host string) string {
	t.Helper()
	name := strings.ReplaceAll(host, ".", "_2e") + ".conf"
	data, err := os.ReadFile(filepath.Join(sy.Prefix(), "conf", "servers", name))
	if errors.Is(err, os.ErrNotExist) {
		// Routed in Lua (--lua-routing): no server block, no directives.
		return ""
	}
	if err != nil {
		t.Fatalf("read the server file of %s: %v", host, err)
	}
	return string(data)
}
