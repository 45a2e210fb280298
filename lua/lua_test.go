package lua_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"switchyard.dev/switchyard/lua"
)

const (
	nginxBinary = "/usr/sbin/nginx"
	modulesDir  = "/usr/lib/nginx/modules"
)

// The http block mirrors what the renderer emits for the Lua modules. The
// test-only parts: $proxy_upstream_name comes from a request header so one
// location can reach every backend, reuseport spreads connections over both
// workers, and the shared dicts are small so "dict full" is cheap to reach.
const nginxConfTemplate = `
{{if .Root}}user root;{{end}}
load_module {{.Modules}}/ndk_http_module.so;
load_module {{.Modules}}/ngx_http_lua_module.so;
pid {{.Dir}}/nginx.pid;
error_log {{.Dir}}/error.log notice;
worker_processes 2;

events {
    worker_connections 1024;
}

http {
    access_log off;
    client_body_temp_path {{.Dir}}/tmp/body;
    proxy_temp_path {{.Dir}}/tmp/proxy;
    fastcgi_temp_path {{.Dir}}/tmp/fastcgi;
    uwsgi_temp_path {{.Dir}}/tmp/uwsgi;
    scgi_temp_path {{.Dir}}/tmp/scgi;

    lua_package_path "$prefix/lua/?.lua;;";
    lua_shared_dict switchyard_config 4m;
    lua_shared_dict switchyard_certs 1m;

    init_worker_by_lua_block {
        require("switchyard.balancer").init_worker()
    }
    header_filter_by_lua_block {
        require("switchyard.balancer").header_filter()
    }
    log_by_lua_block {
        require("switchyard.balancer").log()
    }

    upstream upstream_balancer {
        server 0.0.0.1; # placeholder, balancer_by_lua sets the peer
        balancer_by_lua_block {
            require("switchyard.balancer").balance()
        }
        keepalive 320;
    }

    server {
        listen 127.0.0.1:{{.HTTPPort}} reuseport;
        listen 127.0.0.1:{{.HTTPSPort}} ssl reuseport;

        ssl_certificate {{.Dir}}/default.crt;
        ssl_certificate_key {{.Dir}}/default.key;
        ssl_certificate_by_lua_block {
            require("switchyard.certificate").call()
        }

        add_header X-Worker-Pid $pid always;
        add_header X-Alternative $proxy_alternative_upstream_name always;
        set $proxy_alternative_upstream_name "";

        location / {
            set $proxy_upstream_name $http_x_test_backend;
            rewrite_by_lua_block {
                require("switchyard.balancer").rewrite()
            }
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 3;
            proxy_connect_timeout 2s;
            proxy_pass http://upstream_balancer;
        }

        # The renderer passes the location's backend name to the rewrite
        # hook; it wins over $proxy_upstream_name.
        location /named/ {
            set $proxy_upstream_name $http_x_test_backend;
            rewrite_by_lua_block {
                require("switchyard.balancer").rewrite("default-named-80")
            }
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://upstream_balancer;
        }

        # Which hosts ssl-redirect and HSTS treat as having TLS: "host=a/b"
        # per host, a from configured_for, b from configured_for_lower of
        # the lower-cased host.
        location = /tls-hosts {
            content_by_lua_block {
                local certificate = require("switchyard.certificate")
                local out = {}
                for host in ngx.var.arg_hosts:gmatch("[^,]+") do
                    out[#out + 1] = host .. "=" .. tostring(certificate.configured_for(host)) .. "/"
                        .. tostring(certificate.configured_for_lower(host:lower()))
                end
                ngx.print(table.concat(out, ","))
            }
        }

        # balancer_by_lua without the rewrite hook
        location /no-rewrite/ {
            set $proxy_upstream_name $http_x_test_backend;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://upstream_balancer;
        }
    }

    server {
        listen unix:{{.Dir}}/config.sock;
        client_max_body_size 64m;
        client_body_buffer_size 64k; # small, so big bodies go through a temp file
        location / {
            content_by_lua_block {
                require("switchyard.configuration").call()
            }
        }
    }
}
`

type dataPlane struct {
	t         *testing.T
	dir       string
	httpAddr  string
	httpsAddr string
	cmd       *exec.Cmd
	config    *http.Client // over the unix socket
	proxy     *http.Client // no keep-alive: every request is a new connection
	defCert   *x509.Certificate
}

func TestDataPlane(t *testing.T) {
	for _, path := range []string{nginxBinary, modulesDir + "/ngx_http_lua_module.so", modulesDir + "/ndk_http_module.so"} {
		if _, err := os.Stat(path); err != nil {
			t.Skipf("needs %s: %v", path, err)
		}
	}
	dp := startDataPlane(t)

	t.Run("healthz and unknown paths", dp.testHealthz)
	// Must run before anything is posted.
	t.Run("requests wait for the first configuration", dp.testFirstConfigurationWait)
	t.Run("round robin spreads evenly", dp.testRoundRobin)
	t.Run("rotation survives endpoint changes", dp.testRotationKept)
	t.Run("unavailable backends answer 503", dp.testUnavailable)
	t.Run("endpoint change without reload", dp.testEndpointChange)
	t.Run("idle workers sync from the timer", dp.testTimerSync)
	t.Run("dead endpoint is retried", dp.testDeadEndpoint)
	t.Run("invalid backends are rejected", dp.testInvalidBackends)
	t.Run("large body through temp file", dp.testLargeBody)
	t.Run("dict full answers 507", dp.testBackendsDictFull)
	t.Run("balancer without rewrite hook", dp.testNoRewrite)
	t.Run("backend name passed to the rewrite hook", dp.testNamedRewrite)
	t.Run("config endpoint not reachable via proxy", dp.testConfigNotProxied)
	t.Run("ewma prefers the fast endpoint", dp.testEWMA)
	t.Run("chash keeps keys on their endpoint", dp.testCHash)
	t.Run("chashsubset spreads a key over its subset", dp.testCHashSubset)
	t.Run("sticky cookie attributes and stickiness", dp.testStickyCookie)
	t.Run("sticky persistent vs balanced on scale", dp.testStickyModes)
	t.Run("sticky change on failure", dp.testStickyChangeOnFailure)
	t.Run("certificates by SNI", dp.testCertificates)
	t.Run("invalid certificates are rejected", dp.testInvalidCertificates)
	t.Run("TLS hosts for ssl-redirect and HSTS", dp.testTLSHosts)
	t.Run("canary by header, cookie and weight", dp.testCanary)
	t.Run("invalid canary fields are rejected", dp.testInvalidCanary)

	dp.checkErrorLog()
}

// ---------------------------------------------------------------------------
// nginx lifecycle

func startDataPlane(t *testing.T) *dataPlane {
	t.Helper()
	dir := t.TempDir()
	dp := &dataPlane{t: t, dir: dir}

	for _, sub := range []string{"tmp", "lua/switchyard"} {
		must(t, os.MkdirAll(filepath.Join(dir, sub), 0o755))
	}
	installLua(t, filepath.Join(dir, "lua"))

	defCert, defPEM := newCert(t, "switchyard-default", nil)
	dp.defCert = defCert
	certPEM, keyPEM := splitPEM(t, defPEM)
	must(t, os.WriteFile(filepath.Join(dir, "default.crt"), certPEM, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "default.key"), keyPEM, 0o600))

	httpPort, httpsPort := freePort(t), freePort(t)
	dp.httpAddr = "127.0.0.1:" + strconv.Itoa(httpPort)
	dp.httpsAddr = "127.0.0.1:" + strconv.Itoa(httpsPort)

	var conf bytes.Buffer
	must(t, template.Must(template.New("nginx.conf").Parse(nginxConfTemplate)).Execute(&conf, map[string]any{
		"Root":      os.Geteuid() == 0, // workers must read the 0700 temp dir
		"Modules":   modulesDir,
		"Dir":       dir,
		"HTTPPort":  httpPort,
		"HTTPSPort": httpsPort,
	}))
	confPath := filepath.Join(dir, "nginx.conf")
	must(t, os.WriteFile(confPath, conf.Bytes(), 0o644))

	t.Cleanup(func() {
		if t.Failed() || os.Getenv("SWITCHYARD_TEST_LOG") != "" {
			dp.dumpErrorLog()
		}
	})

	if out, err := exec.Command(nginxBinary, "-t", "-p", dir+"/", "-c", confPath).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t failed: %v\n%s", err, out)
	}

	cmd := exec.Command(nginxBinary, "-p", dir+"/", "-c", confPath, "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	// Own process group, so the cleanup can reach workers even if the master
	// is gone; Pdeathsig stops the master if the test binary dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	must(t, cmd.Start())
	dp.cmd = cmd
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { stopNginx(t, cmd, exited) })

	sock := filepath.Join(dir, "config.sock")
	dp.config = &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, "unix", sock)
			},
		},
	}
	dp.proxy = &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{DisableKeepAlives: true},
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			t.Fatalf("nginx exited during startup")
		default:
		}
		status, body := dp.configRequest("GET", "/healthz", "")
		if status == 200 && body == "ok" && len(dp.workers()) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx not ready: healthz %d %q, workers %v", status, body, dp.workers())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return dp
}

func installLua(t *testing.T, dst string) {
	t.Helper()
	n := 0
	err := fs.WalkDir(lua.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := lua.FS.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		return os.WriteFile(filepath.Join(dst, path), data, 0o644)
	})
	must(t, err)
	if n == 0 {
		t.Fatal("lua.FS is empty")
	}
}

func stopNginx(t *testing.T, cmd *exec.Cmd, exited <-chan struct{}) {
	pid := cmd.Process.Pid
	_ = syscall.Kill(pid, syscall.SIGQUIT) // graceful shutdown of master and workers
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		t.Logf("nginx did not quit in 5s, killing process group %d", pid)
	}
	// Master and workers share the process group started above; make sure
	// nothing of it survives.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-exited
}

// workers returns the PIDs of the master's children, from /proc.
func (dp *dataPlane) workers() []int {
	master := dp.cmd.Process.Pid
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may contain spaces, so split after ')'
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(master) && fields[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

func (dp *dataPlane) errorLog() string {
	data, _ := os.ReadFile(filepath.Join(dp.dir, "error.log"))
	return string(data)
}

func (dp *dataPlane) dumpErrorLog() {
	dp.t.Logf("---- %s/error.log ----\n%s", dp.dir, dp.errorLog())
}

// checkErrorLog fails on nginx or Lua failures that the tests did not cause
// on purpose, and on secret material in the log.
func (dp *dataPlane) checkErrorLog() {
	t := dp.t
	log := dp.errorLog()
	for _, bad := range []string{"[emerg]", "[alert]", "[crit]", "runtime error", "failed to run", "lua entry thread aborted", "stack traceback"} {
		if strings.Contains(log, bad) {
			t.Errorf("error.log contains %q", bad)
		}
	}
	for _, secret := range []string{"BEGIN", "PRIVATE KEY", "MII"} {
		if strings.Contains(log, secret) {
			t.Errorf("error.log contains PEM material (%q)", secret)
		}
	}
	// JSON is decoded once per version and worker, never per request.
	loads := map[string]int{}
	for _, m := range loadedRE.FindAllStringSubmatch(log, -1) {
		loads[m[1]+" version "+m[2]]++
	}
	if len(loads) == 0 {
		t.Errorf("no backend loads logged")
	}
	for k, n := range loads {
		if n > 1 {
			t.Errorf("worker %s decoded %d times", k, n)
		}
	}
}

// ---------------------------------------------------------------------------
// clients

func (dp *dataPlane) configRequest(method, path, body string) (int, string) {
	dp.t.Helper()
	req, err := http.NewRequest(method, "http://switchyard"+path, strings.NewReader(body))
	must(dp.t, err)
	resp, err := dp.config.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

type proxyResponse struct {
	status  int
	body    string
	backend string // X-Backend of the Go backend that answered
	worker  string // X-Worker-Pid added by nginx
	// alternative is $proxy_alternative_upstream_name (X-Alternative).
	alternative string
}

func (dp *dataPlane) get(path, backend string) proxyResponse {
	dp.t.Helper()
	req, err := http.NewRequest("GET", "http://"+dp.httpAddr+path, nil)
	must(dp.t, err)
	if backend != "" {
		req.Header.Set("X-Test-Backend", backend)
	}
	resp, err := dp.proxy.Do(req)
	if err != nil {
		dp.t.Fatalf("GET %s (backend %q): %v", path, backend, err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return proxyResponse{resp.StatusCode, string(data), resp.Header.Get("X-Backend"), resp.Header.Get("X-Worker-Pid"),
		resp.Header.Get("X-Alternative")}
}

// ---------------------------------------------------------------------------
// backends

type endpoint struct {
	Address string `json:"address"`
	Port    string `json:"port"`
}

type backend struct {
	Name        string            `json:"name"`
	Service     map[string]string `json:"service,omitempty"`
	Endpoints   []endpoint        `json:"endpoints"`
	LoadBalance string            `json:"load-balance,omitempty"`
	// Canary fields, ingress-nginx's shape.
	AlternativeBackends  []string       `json:"alternativeBackends,omitempty"`
	TrafficShapingPolicy map[string]any `json:"trafficShapingPolicy,omitempty"`
	// Balancing settings, in ingress-nginx's shape (see balancing_test.go).
	UpstreamHashBy  map[string]any `json:"upstreamHashByConfig,omitempty"`
	SessionAffinity map[string]any `json:"sessionAffinityConfig,omitempty"`
}

// startBackends starts n HTTP servers that answer with their own id.
func startBackends(t *testing.T, prefix string, n int) ([]endpoint, []string) {
	t.Helper()
	var eps []endpoint
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%d", prefix, i)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Backend", id)
			fmt.Fprintf(w, "%s %s", id, r.URL.Path)
		}))
		t.Cleanup(srv.Close)
		host, port, err := net.SplitHostPort(srv.Listener.Addr().String())
		must(t, err)
		eps = append(eps, endpoint{host, port})
		ids = append(ids, id)
	}
	return eps, ids
}

func (dp *dataPlane) postBackends(backends ...backend) {
	dp.t.Helper()
	body, err := json.Marshal(backends)
	must(dp.t, err)
	if status, text := dp.configRequest("POST", "/configuration/backends", string(body)); status != 201 {
		dp.t.Fatalf("POST backends: %d %s", status, text)
	}
}

func svc(name string) map[string]string {
	return map[string]string{"namespace": "default", "name": name, "port": "80"}
}

// ---------------------------------------------------------------------------
// tests

func (dp *dataPlane) testHealthz(t *testing.T) {
	tests := []struct {
		method, path string
		status       int
	}{
		{"GET", "/healthz", 200},
		{"GET", "/", 404},
		{"GET", "/configuration", 404},
		{"GET", "/configuration/unknown", 404},
		{"DELETE", "/configuration/backends", 405},
		{"GET", "/configuration/certificates", 405},
	}
	for _, tt := range tests {
		if status, body := dp.configRequest(tt.method, tt.path, ""); status != tt.status {
			t.Errorf("%s %s = %d %q, want %d", tt.method, tt.path, status, body, tt.status)
		}
	}
}

// A request that arrives after NGINX started but before the controller
// posted anything waits for the backends instead of getting a 503.
func (dp *dataPlane) testFirstConfigurationWait(t *testing.T) {
	eps, ids := startBackends(t, "first", 1)
	posted := make(chan time.Time, 1)
	go func() {
		time.Sleep(300 * time.Millisecond)
		body, _ := json.Marshal([]backend{{Name: "first", Service: svc("first"), Endpoints: eps}})
		status, text := dp.configRequest("POST", "/configuration/backends", string(body))
		if status != 201 {
			t.Errorf("POST backends: %d %s", status, text)
		}
		posted <- time.Now()
	}()
	start := time.Now()
	r := dp.get("/", "first")
	answered := time.Now()
	if r.status != 200 || r.backend != ids[0] {
		t.Fatalf("got %d from %q, want 200 from %s", r.status, r.backend, ids[0])
	}
	if at := <-posted; answered.Before(at.Add(-50*time.Millisecond)) || answered.Sub(start) < 250*time.Millisecond {
		t.Fatalf("answered after %s, before the configuration arrived", answered.Sub(start))
	}
}

func (dp *dataPlane) testRoundRobin(t *testing.T) {
	eps, ids := startBackends(t, "rr", 3)
	dp.postBackends(backend{Name: "default-rr-80", Service: svc("rr"), Endpoints: eps, LoadBalance: "round_robin"})

	const requests = 60
	counts := map[string]int{}
	workers := map[string]bool{}
	for range requests {
		r := dp.get("/rr", "default-rr-80")
		if r.status != 200 {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		counts[r.backend]++
		workers[r.worker] = true
	}
	minC, maxC := requests, 0
	for _, id := range ids {
		minC, maxC = min(minC, counts[id]), max(maxC, counts[id])
	}
	// Each worker rotates on its own, so each adds at most 1 to the spread.
	t.Logf("per endpoint %v over %d workers", counts, len(workers))
	if minC == 0 || maxC-minC > len(workers) {
		t.Errorf("uneven round robin: %v (workers %d)", counts, len(workers))
	}
}

// testRotationKept pins one keep-alive connection (so one worker) and checks
// that a new endpoint list continues the rotation where it was instead of
// starting over.
func (dp *dataPlane) testRotationKept(t *testing.T) {
	eps, ids := startBackends(t, "rot", 5)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer client.CloseIdleConnections()
	worker := ""
	get := func() string {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+dp.httpAddr+"/", nil)
		req.Header.Set("X-Test-Backend", "default-rot-80")
		resp, err := client.Do(req)
		must(t, err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
		if w := resp.Header.Get("X-Worker-Pid"); worker == "" {
			worker = w
		} else if w != worker {
			t.Fatalf("keep-alive connection moved from worker %s to %s", worker, w)
		}
		return resp.Header.Get("X-Backend")
	}

	current := eps[:3]
	dp.postBackends(backend{Name: "default-rot-80", Endpoints: current})
	last := get()
	for n := 4; n <= 5; n++ {
		// grow the list at the end: the index after `last` stays valid
		current = eps[:n]
		dp.postBackends(backend{Name: "default-rot-80", Endpoints: current})
		want := ids[(slices.Index(ids, last)+1)%n]
		if got := get(); got != want {
			t.Fatalf("after changing to %d endpoints got %s, want %s (rotation restarted?)", n, got, want)
		}
		last = want
	}
}

func (dp *dataPlane) testUnavailable(t *testing.T) {
	eps, _ := startBackends(t, "ok", 1)
	dp.postBackends(
		backend{Name: "default-ok-80", Endpoints: eps},
		backend{Name: "default-empty-80", Service: svc("empty"), Endpoints: []endpoint{}},
	)
	tests := []struct {
		name, backend string
		status        int
	}{
		{"known backend", "default-ok-80", 200},
		{"unknown backend", "default-missing-80", 503},
		{"no upstream name", "", 503},
		{"empty endpoints", "default-empty-80", 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if r := dp.get("/", tt.backend); r.status != tt.status {
				t.Errorf("status %d, want %d (%s)", r.status, tt.status, r.body)
			}
		})
	}
}

func (dp *dataPlane) testEndpointChange(t *testing.T) {
	oldEps, oldIDs := startBackends(t, "old", 2)
	newEps, newIDs := startBackends(t, "new", 2)
	dp.postBackends(backend{Name: "default-change-80", Endpoints: oldEps})

	// Warm up both workers on the old endpoints.
	seen := map[string]bool{}
	for i := 0; len(seen) < 2 && i < 200; i++ {
		r := dp.get("/", "default-change-80")
		if r.status != 200 || !slices.Contains(oldIDs, r.backend) {
			t.Fatalf("before change: %d %q", r.status, r.backend)
		}
		seen[r.worker] = true
	}
	if len(seen) < 2 {
		t.Fatalf("requests did not reach both workers: %v", seen)
	}
	workersBefore := dp.workers()

	dp.postBackends(backend{Name: "default-change-80", Endpoints: newEps})
	posted := time.Now()

	// Every request after the 201 must see the new endpoints, on every
	// worker: rewrite() syncs before it looks the backend up.
	firstSeen := map[string]time.Duration{}
	for i := 0; i < 200 && (len(firstSeen) < 2 || i < 40); i++ {
		r := dp.get("/", "default-change-80")
		if r.status != 200 || !slices.Contains(newIDs, r.backend) {
			t.Fatalf("request %d after change went to %q (status %d), want one of %v", i, r.backend, r.status, newIDs)
		}
		if _, ok := firstSeen[r.worker]; !ok {
			firstSeen[r.worker] = time.Since(posted)
		}
	}
	t.Logf("first new-endpoint response per worker after POST: %v", firstSeen)
	if len(firstSeen) < 2 {
		t.Errorf("new endpoints seen on %d workers, want 2", len(firstSeen))
	}
	for w, d := range firstSeen {
		if d > 100*time.Millisecond {
			t.Errorf("worker %s served the new endpoints only after %v", w, d)
		}
	}
	if after := dp.workers(); !slices.Equal(workersBefore, after) {
		t.Errorf("worker PIDs changed: %v -> %v (reload?)", workersBefore, after)
	}
}

var loadedRE = regexp.MustCompile(`\[notice\] (\d+)#\d+: .*loaded backends version (\d+)`)

// testTimerSync checks that workers that get no traffic still load a new
// version, from their ngx.timer.every.
func (dp *dataPlane) testTimerSync(t *testing.T) {
	eps, _ := startBackends(t, "timer", 1)
	// The 201 text carries the version number to look for in the log.
	body, _ := json.Marshal([]backend{{Name: "default-timer-80", Endpoints: eps, LoadBalance: "least_conn"}})
	status, resp := dp.configRequest("POST", "/configuration/backends", string(body))
	posted := time.Now()
	if status != 201 {
		t.Fatalf("POST: %d %s", status, resp)
	}
	version := strings.TrimSpace(strings.TrimPrefix(resp, "backends version "))
	workers := dp.workers()
	// The timer ticks every 100 ms; allow for a busy machine.
	deadline := posted.Add(time.Second)
	for {
		loaded := map[string]bool{}
		for _, m := range loadedRE.FindAllStringSubmatch(dp.errorLog(), -1) {
			if m[2] == version {
				loaded[m[1]] = true
			}
		}
		if len(loaded) == len(workers) {
			t.Logf("both workers loaded version %s %v after the POST without traffic", version, time.Since(posted).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("workers that loaded version %s: %v, want all of %v", version, loaded, workers)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The unknown load-balance fell back to round robin.
	if r := dp.get("/", "default-timer-80"); r.status != 200 {
		t.Errorf("unknown load-balance: status %d", r.status)
	}
	if !strings.Contains(dp.errorLog(), `unknown load-balance "least_conn"`) {
		t.Errorf("no warning about the unknown load-balance")
	}
}

func (dp *dataPlane) testDeadEndpoint(t *testing.T) {
	eps, ids := startBackends(t, "live", 2)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	_, deadPort, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close() // nothing listens there any more: connection refused
	dp.postBackends(backend{Name: "default-dead-80", Endpoints: []endpoint{eps[0], {"127.0.0.1", deadPort}, eps[1]}})

	counts := map[string]int{}
	for i := range 30 {
		r := dp.get("/", "default-dead-80")
		if r.status != 200 {
			t.Fatalf("request %d: status %d %s", i, r.status, r.body)
		}
		counts[r.backend]++
	}
	if counts[ids[0]] == 0 || counts[ids[1]] == 0 {
		t.Errorf("live endpoints not both used: %v", counts)
	}
	if !strings.Contains(dp.errorLog(), "127.0.0.1:"+deadPort) {
		t.Errorf("the dead endpoint was never tried (no connect error logged)")
	}

	// Only dead endpoints: nginx gives up after proxy_next_upstream_tries.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	_, deadPort2, _ := net.SplitHostPort(ln2.Addr().String())
	ln2.Close()
	dp.postBackends(backend{Name: "default-alldead-80", Endpoints: []endpoint{{"127.0.0.1", deadPort}, {"127.0.0.1", deadPort2}}})
	if r := dp.get("/", "default-alldead-80"); r.status != 502 {
		t.Errorf("all endpoints dead: status %d, want 502", r.status)
	}
}

func (dp *dataPlane) testInvalidBackends(t *testing.T) {
	eps, ids := startBackends(t, "keep", 1)
	good, _ := json.Marshal([]backend{{Name: "default-keep-80", Service: svc("keep"), Endpoints: eps}})
	if status, text := dp.configRequest("POST", "/configuration/backends", string(good)); status != 201 {
		t.Fatalf("POST: %d %s", status, text)
	}

	tests := []struct {
		name, body, reason string
	}{
		{"empty body", "", "empty body"},
		{"not JSON", "[{", "invalid JSON"},
		{"object", `{"name":"x"}`, "array"},
		{"empty object", `{}`, "array"},
		{"item not object", `[1]`, "must be an object"},
		{"missing name", `[{"endpoints":[]}]`, "name"},
		{"numeric name", `[{"name":1,"endpoints":[]}]`, "name"},
		{"missing endpoints", `[{"name":"a"}]`, "endpoints"},
		{"endpoints object", `[{"name":"a","endpoints":{"address":"1.2.3.4"}}]`, "endpoints"},
		{"numeric port", `[{"name":"a","endpoints":[{"address":"1.2.3.4","port":80}]}]`, "port"},
		{"bad port", `[{"name":"a","endpoints":[{"address":"1.2.3.4","port":"http"}]}]`, "port"},
		{"missing address", `[{"name":"a","endpoints":[{"port":"80"}]}]`, "address"},
		{"duplicate names", `[{"name":"a","endpoints":[]},{"name":"a","endpoints":[]}]`, "duplicate"},
		{"numeric load-balance", `[{"name":"a","endpoints":[],"load-balance":1}]`, "load-balance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, text := dp.configRequest("POST", "/configuration/backends", tt.body)
			if status != 400 || !strings.Contains(text, tt.reason) {
				t.Errorf("POST %s = %d %q, want 400 mentioning %q", tt.body, status, text, tt.reason)
			}
		})
	}

	if status, text := dp.configRequest("GET", "/configuration/backends", ""); status != 200 || text != string(good) {
		t.Errorf("GET after rejected POSTs = %d %q, want %q", status, text, good)
	}
	if r := dp.get("/", "default-keep-80"); r.status != 200 || r.backend != ids[0] {
		t.Errorf("previous backends stopped working: %d %q", r.status, r.backend)
	}
}

// bigBackends builds a backends list of about size bytes whose last backend
// points at eps.
func bigBackends(t *testing.T, size int, eps []endpoint) ([]byte, string) {
	var list []backend
	for i, total := 0, 0; total < size; i++ {
		b := backend{
			Name:      fmt.Sprintf("bulk-namespace-%06d-service-80", i),
			Service:   map[string]string{"namespace": "bulk-namespace", "name": fmt.Sprintf("service-%06d", i), "port": "80"},
			Endpoints: []endpoint{{"10.1.2.3", "8080"}, {"10.1.2.4", "8080"}},
		}
		item, err := json.Marshal(b)
		must(t, err)
		total += len(item) + 1
		list = append(list, b)
	}
	list[len(list)-1].Endpoints = eps
	body, err := json.Marshal(list)
	must(t, err)
	return body, list[len(list)-1].Name
}

func (dp *dataPlane) testLargeBody(t *testing.T) {
	eps, ids := startBackends(t, "big", 1)
	body, last := bigBackends(t, 1200*1024, eps) // far above client_body_buffer_size
	status, text := dp.configRequest("POST", "/configuration/backends", string(body))
	if status != 201 {
		t.Fatalf("POST %d bytes: %d %s", len(body), status, text)
	}
	if status, got := dp.configRequest("GET", "/configuration/backends", ""); status != 200 || got != string(body) {
		t.Errorf("GET returned %d, %d bytes, want the %d posted bytes", status, len(got), len(body))
	}
	if r := dp.get("/", last); r.status != 200 || r.backend != ids[0] {
		t.Errorf("last backend of the big list: %d %q", r.status, r.backend)
	}
}

func (dp *dataPlane) testBackendsDictFull(t *testing.T) {
	eps, ids := startBackends(t, "full", 1)
	dp.postBackends(backend{Name: "default-full-80", Endpoints: eps})
	_, before := dp.configRequest("GET", "/configuration/backends", "")

	body, _ := bigBackends(t, 5*1024*1024, eps) // the test dict has 4m
	status, text := dp.configRequest("POST", "/configuration/backends", string(body))
	if status != 507 {
		t.Fatalf("POST %d bytes into a 4m dict: %d %q, want 507", len(body), status, text)
	}
	if status, after := dp.configRequest("GET", "/configuration/backends", ""); status != 200 || after != before {
		t.Errorf("GET after 507 = %d (%d bytes), want the previous %d bytes", status, len(after), len(before))
	}
	if r := dp.get("/", "default-full-80"); r.status != 200 || r.backend != ids[0] {
		t.Errorf("previous backends after 507: %d %q", r.status, r.backend)
	}
	// And the dict is usable again afterwards.
	dp.postBackends(backend{Name: "default-full-80", Endpoints: eps})
}

func (dp *dataPlane) testNoRewrite(t *testing.T) {
	eps, ids := startBackends(t, "norw", 1)
	dp.postBackends(backend{Name: "default-norw-80", Endpoints: eps})
	if r := dp.get("/no-rewrite/x", "default-norw-80"); r.status != 200 || r.backend != ids[0] {
		t.Errorf("known backend: %d %q", r.status, r.backend)
	}
	// Stock nginx turns ngx.exit(503) in balancer_by_lua into 500 (no
	// OpenResty status patch). What matters: the placeholder 0.0.0.1 is
	// never contacted.
	if r := dp.get("/no-rewrite/x", "default-missing-80"); r.status != 500 && r.status != 503 {
		t.Errorf("unknown backend in balancer phase: %d %q", r.status, r.body)
	}
	if strings.Contains(dp.errorLog(), "0.0.0.1") {
		t.Errorf("the placeholder upstream 0.0.0.1 was contacted")
	}
}

func (dp *dataPlane) testNamedRewrite(t *testing.T) {
	eps, ids := startBackends(t, "named", 1)
	otherEps, _ := startBackends(t, "named-other", 1)
	dp.postBackends(backend{Name: "default-named-80", Endpoints: eps}, backend{Name: "default-other-80", Endpoints: otherEps})
	for _, header := range []string{"", "default-other-80", "default-missing-80"} {
		if r := dp.get("/named/x", header); r.status != 200 || r.backend != ids[0] {
			t.Errorf("X-Test-Backend %q: %d %q, want the named backend %s", header, r.status, r.backend, ids[0])
		}
	}
	// The name is still checked against the published backends.
	dp.postBackends(backend{Name: "default-other-80", Endpoints: otherEps})
	if r := dp.get("/named/x", "default-other-80"); r.status != 503 {
		t.Errorf("named backend removed: %d %q, want 503", r.status, r.backend)
	}
}

func (dp *dataPlane) testConfigNotProxied(t *testing.T) {
	eps, ids := startBackends(t, "app", 1)
	dp.postBackends(backend{Name: "default-app-80", Endpoints: eps})
	_, stored := dp.configRequest("GET", "/configuration/backends", "")

	// With a backend, the path is proxied to the application.
	r := dp.get("/configuration/backends", "default-app-80")
	if r.status != 200 || r.backend != ids[0] || r.body != ids[0]+" /configuration/backends" {
		t.Errorf("GET /configuration/backends via proxy: %d %q %q", r.status, r.backend, r.body)
	}
	// Without one it is a 503, not the configuration endpoint.
	for _, path := range []string{"/configuration/backends", "/healthz"} {
		if r := dp.get(path, ""); r.status != 503 || strings.Contains(r.body, "default-app-80") || r.body == "ok" {
			t.Errorf("GET %s via proxy without backend: %d %q", path, r.status, r.body)
		}
	}
	// A POST through the proxy must not change the configuration.
	req, _ := http.NewRequest("POST", "http://"+dp.httpAddr+"/configuration/backends", strings.NewReader("[]"))
	resp, err := dp.proxy.Do(req)
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode == 201 {
		t.Errorf("POST via proxy answered 201")
	}
	if _, now := dp.configRequest("GET", "/configuration/backends", ""); now != stored {
		t.Errorf("configuration changed by a request through the proxy")
	}
}

// ---------------------------------------------------------------------------
// certificates

type certConfig struct {
	Certificates map[string]string `json:"certificates"`
	Servers      map[string]string `json:"servers"`
}

func (dp *dataPlane) postCertificates(cfg certConfig) (int, string) {
	dp.t.Helper()
	body, err := json.Marshal(cfg)
	must(dp.t, err)
	return dp.configRequest("POST", "/configuration/certificates", string(body))
}

// handshake returns the leaf certificate served for sni ("" sends no SNI).
func (dp *dataPlane) handshake(t *testing.T, sni string) *x509.Certificate {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", dp.httpsAddr,
		&tls.Config{ServerName: sni, InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("TLS handshake with SNI %q: %v", sni, err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0]
}

func (dp *dataPlane) testCertificates(t *testing.T) {
	a, aPEM := newCert(t, "a.example.test", nil)
	wild, wildPEM := newCert(t, "*.wild.example.test", nil)
	_, mismatchPEM := newCert(t, "m.example.test", nil)
	_, otherPEM := newCert(t, "other.example.test", nil)
	// certificate of m.example.test with the key of another certificate
	mCert, _ := splitPEM(t, mismatchPEM)
	_, otherKey := splitPEM(t, otherPEM)
	badPair := string(mCert) + string(otherKey)

	status, text := dp.postCertificates(certConfig{
		Certificates: map[string]string{"default/a": aPEM, "default/wild": wildPEM, "default/m": badPair},
		Servers: map[string]string{
			"a.example.test":      "default/a",
			"*.wild.example.test": "default/wild",
			"m.example.test":      "default/m",
		},
	})
	if status != 201 {
		t.Fatalf("POST certificates: %d %s", status, text)
	}

	tests := []struct {
		sni  string
		want *x509.Certificate
	}{
		{"a.example.test", a},
		{"A.Example.TEST", a},
		{"x.wild.example.test", wild},
		{"wild.example.test", dp.defCert},
		{"a.b.wild.example.test", dp.defCert},
		{"unknown.test", dp.defCert},
		{"m.example.test", dp.defCert}, // key does not match: default, not a failed handshake
		{"", dp.defCert},               // no SNI
	}
	for _, tt := range tests {
		t.Run("sni="+tt.sni, func(t *testing.T) {
			// several handshakes, so both workers (and their caches) answer
			for range 6 {
				if got := dp.handshake(t, tt.sni); !got.Equal(tt.want) {
					t.Fatalf("got certificate %q serial %v, want %q serial %v", got.Subject.CommonName, got.SerialNumber, tt.want.Subject.CommonName, tt.want.SerialNumber)
				}
			}
		})
	}
	if !strings.Contains(dp.errorLog(), "private key of default/m does not match") {
		t.Errorf("key mismatch was not logged")
	}

	// Replacing the certificate is picked up without a reload.
	workers := dp.workers()
	a2, a2PEM := newCert(t, "a.example.test", nil)
	status, text = dp.postCertificates(certConfig{
		Certificates: map[string]string{"default/a": a2PEM},
		Servers:      map[string]string{"a.example.test": "default/a"},
	})
	if status != 201 {
		t.Fatalf("POST replacement: %d %s", status, text)
	}
	for range 6 {
		if got := dp.handshake(t, "a.example.test"); !got.Equal(a2) {
			t.Fatalf("after replacement got serial %v, want %v", got.SerialNumber, a2.SerialNumber)
		}
	}
	if got := dp.handshake(t, "x.wild.example.test"); !got.Equal(dp.defCert) {
		t.Errorf("removed wildcard still served")
	}
	if after := dp.workers(); !slices.Equal(workers, after) {
		t.Errorf("worker PIDs changed: %v -> %v", workers, after)
	}

	// Dict full: 507, and the previous certificates stay.
	huge := strings.Repeat("x", 1200*1024) // the test dict has 1m
	status, text = dp.postCertificates(certConfig{
		Certificates: map[string]string{"default/a": aPEM, "default/huge": huge},
		Servers:      map[string]string{"a.example.test": "default/a", "huge.example.test": "default/huge"},
	})
	if status != 507 {
		t.Fatalf("POST into a full dict: %d %q, want 507", status, text)
	}
	for range 4 {
		if got := dp.handshake(t, "a.example.test"); !got.Equal(a2) {
			t.Fatalf("after 507 got serial %v, want the previous %v", got.SerialNumber, a2.SerialNumber)
		}
	}
}

// tlsHosts asks both workers (fresh connections) which hosts have TLS.
func (dp *dataPlane) tlsHosts(t *testing.T, hosts string) string {
	t.Helper()
	var first string
	for i := range 4 {
		r := dp.get("/tls-hosts?hosts="+hosts, "")
		if r.status != 200 {
			t.Fatalf("/tls-hosts: %d %s", r.status, r.body)
		}
		if i > 0 && r.body != first {
			t.Fatalf("workers disagree: %q vs %q", first, r.body)
		}
		first = r.body
	}
	return first
}

func (dp *dataPlane) testTLSHosts(t *testing.T) {
	_, aPEM := newCert(t, "a.example.test", nil)
	_, wildPEM := newCert(t, "*.wild.example.test", nil)
	hosts := "a.example.test,A.Example.Test,x.wild.example.test,wild.example.test,a.b.wild.example.test,b.example.test"
	steps := []struct {
		name string
		cfg  certConfig
		want string
	}{
		{"exact and wildcard", certConfig{
			Certificates: map[string]string{"default/a": aPEM, "default/wild": wildPEM},
			Servers:      map[string]string{"a.example.test": "default/a", "*.wild.example.test": "default/wild"},
		}, "a.example.test=true/true,A.Example.Test=true/true,x.wild.example.test=true/true,wild.example.test=false/false," +
			"a.b.wild.example.test=false/false,b.example.test=false/false"},
		// Without a wildcard name the miss path skips the suffix lookup;
		// the answer must not change.
		{"exact only", certConfig{
			Certificates: map[string]string{"default/a": aPEM},
			Servers:      map[string]string{"a.example.test": "default/a"},
		}, "a.example.test=true/true,A.Example.Test=true/true,x.wild.example.test=false/false,wild.example.test=false/false," +
			"a.b.wild.example.test=false/false,b.example.test=false/false"},
		{"wildcard only", certConfig{
			Certificates: map[string]string{"default/wild": wildPEM},
			Servers:      map[string]string{"*.wild.example.test": "default/wild"},
		}, "a.example.test=false/false,A.Example.Test=false/false,x.wild.example.test=true/true,wild.example.test=false/false," +
			"a.b.wild.example.test=false/false,b.example.test=false/false"},
	}
	for _, step := range steps {
		if status, text := dp.postCertificates(step.cfg); status != 201 {
			t.Fatalf("%s: POST certificates: %d %s", step.name, status, text)
		}
		if got := dp.tlsHosts(t, hosts); got != step.want {
			t.Errorf("%s:\n got %s\nwant %s", step.name, got, step.want)
		}
	}
}

func (dp *dataPlane) testInvalidCertificates(t *testing.T) {
	tests := []struct {
		name, body, reason string
	}{
		{"not JSON", `{"certificates":`, "invalid JSON"},
		{"array", `[]`, "object"},
		{"certificates array", `{"certificates":["x"],"servers":{}}`, "certificates"},
		{"pem not string", `{"certificates":{"a/b":1},"servers":{}}`, "PEM"},
		{"unknown reference", `{"certificates":{},"servers":{"a.test":"a/b"}}`, "unknown certificate"},
		{"servers array", `{"certificates":{},"servers":["a.test"]}`, "servers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, text := dp.configRequest("POST", "/configuration/certificates", tt.body)
			if status != 400 || !strings.Contains(text, tt.reason) {
				t.Errorf("POST %s = %d %q, want 400 mentioning %q", tt.body, status, text, tt.reason)
			}
		})
	}
	// Empty configuration is valid and removes every certificate.
	if status, text := dp.configRequest("POST", "/configuration/certificates", `{"certificates":{},"servers":{}}`); status != 201 {
		t.Fatalf("POST empty: %d %s", status, text)
	}
	if got := dp.handshake(t, "a.example.test"); !got.Equal(dp.defCert) {
		t.Errorf("certificate still served after removing all")
	}
}

// ---------------------------------------------------------------------------
// helpers

// newCert returns a self-signed certificate for cn and its PEM chain
// followed by the PKCS#8 key, the format the certificates endpoint takes.
func newCert(t *testing.T, cn string, key *ecdsa.PrivateKey) (*x509.Certificate, string) {
	t.Helper()
	if key == nil {
		var err error
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		must(t, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	must(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     []string{cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	must(t, err)
	cert, err := x509.ParseCertificate(der)
	must(t, err)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	must(t, err)
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	out = append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8})...)
	return cert, string(out)
}

// splitPEM separates the certificate and key blocks of newCert's output.
func splitPEM(t *testing.T, data string) (certPEM, keyPEM []byte) {
	t.Helper()
	rest := []byte(data)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type == "CERTIFICATE" {
			certPEM = append(certPEM, pem.EncodeToMemory(block)...)
		} else {
			keyPEM = append(keyPEM, pem.EncodeToMemory(block)...)
		}
	}
	if certPEM == nil || keyPEM == nil {
		t.Fatal(errors.New("splitPEM: missing block"))
	}
	return certPEM, keyPEM
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	must(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// getWith is get with extra request headers.
// testCanary posts a primary with a canary alternative and checks the
// routing order of ingress-nginx's balancer: header, cookie, weight.
func (dp *dataPlane) testCanary(t *testing.T) {
	primaryEps, _ := startBackends(t, "stable", 1)
	canaryEps, _ := startBackends(t, "canary", 1)
	post := func(policy map[string]any) {
		dp.postBackends(
			backend{Name: "default-stable-80", Service: svc("stable"), Endpoints: primaryEps, AlternativeBackends: []string{"default-canary-80"}},
			backend{Name: "default-canary-80", Service: svc("canary"), Endpoints: canaryEps, TrafficShapingPolicy: policy})
	}
	expect := func(what string, headers map[string]string, wantBackend string) {
		t.Helper()
		// Several requests: both workers, and weight 0/100 never flips.
		for range 6 {
			r, _ := dp.getWith(t, "/c", "default-stable-80", headers)
			if r.status != 200 || r.backend != wantBackend {
				t.Fatalf("%s: got %d from %q (%s), want %s", what, r.status, r.backend, r.body, wantBackend)
			}
			wantAlt := ""
			if wantBackend == "canary-0" {
				wantAlt = "default-canary-80"
			}
			if r.alternative != wantAlt {
				t.Fatalf("%s: $proxy_alternative_upstream_name %q, want %q", what, r.alternative, wantAlt)
			}
		}
	}

	post(map[string]any{"weight": 0, "weightTotal": 100, "header": "X-Canary", "cookie": "canary"})
	expect("no header, weight 0", nil, "stable-0")
	expect("header always", map[string]string{"X-Canary": "always"}, "canary-0")
	expect("header never", map[string]string{"X-Canary": "never"}, "stable-0")
	expect("other header value falls through", map[string]string{"X-Canary": "maybe"}, "stable-0")
	expect("cookie always", map[string]string{"Cookie": "a=b; canary=always"}, "canary-0")
	expect("header never beats cookie always", map[string]string{"X-Canary": "never", "Cookie": "canary=always"}, "stable-0")

	post(map[string]any{"weight": 100, "weightTotal": 100, "header": "X-Canary", "cookie": "canary"})
	expect("weight 100", nil, "canary-0")
	expect("cookie never beats weight 100", map[string]string{"Cookie": "canary=never"}, "stable-0")
	expect("header never beats weight 100", map[string]string{"X-Canary": "never"}, "stable-0")

	post(map[string]any{"weight": 0, "weightTotal": 100, "header": "X-Canary", "headerValue": "v2"})
	expect("header value match", map[string]string{"X-Canary": "v2"}, "canary-0")
	expect("header value mismatch", map[string]string{"X-Canary": "always"}, "stable-0")

	post(map[string]any{"weight": 0, "weightTotal": 100, "header": "X-Canary", "headerPattern": "^(beta|gamma)-[0-9]+$"})
	expect("header pattern match", map[string]string{"X-Canary": "gamma-12"}, "canary-0")
	expect("header pattern mismatch", map[string]string{"X-Canary": "delta-12"}, "stable-0")

	// weight 1 of 4: about a quarter of 400 requests.
	post(map[string]any{"weight": 1, "weightTotal": 4})
	canary := 0
	for range 400 {
		if r, _ := dp.getWith(t, "/c", "default-stable-80", nil); r.backend == "canary-0" {
			canary++
		}
	}
	if canary < 50 || canary > 150 {
		t.Errorf("weight 1/4: %d of 400 requests went to the canary", canary)
	}

	// A primary whose alternative does not exist is served alone.
	dp.postBackends(backend{Name: "default-stable-80", Service: svc("stable"), Endpoints: primaryEps, AlternativeBackends: []string{"gone"}})
	expect("missing alternative", map[string]string{"X-Canary": "always"}, "stable-0")
	if !strings.Contains(dp.errorLog(), `no alternative backend named "gone"`) {
		t.Errorf("a missing alternative backend is not logged")
	}
}

func (dp *dataPlane) testInvalidCanary(t *testing.T) {
	for _, body := range []string{
		`[{"name":"a","endpoints":[],"alternativeBackends":"b"}]`,
		`[{"name":"a","endpoints":[],"alternativeBackends":[1]}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":[1]}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":{"weight":-1}}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":{"weight":1.5}}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":{"weight":1,"weightTotal":0}}]`,
		`[{"name":"a","endpoints":[],"trafficShapingPolicy":{"weight":1,"header":7}}]`,
	} {
		if status, text := dp.configRequest("POST", "/configuration/backends", body); status != 400 {
			t.Errorf("POST %s: %d %s, want 400", body, status, text)
		}
	}
}
