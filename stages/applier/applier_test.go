package applier_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap/zaptest"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/nginx"
	"switchyard.dev/switchyard/stages/applier"
)

// rig runs the applier against a real embedded bus and a real NGINX; the
// test plays the renderer by publishing its table.
type rig struct {
	t       *testing.T
	conn    *bus.Conn
	writer  *bus.Writer
	prefix  string
	socket  string
	port    int
	gen     uint64
	results chan bus.ApplyResult
}

// newRig starts the applier; before, if given, runs first (the prefix is
// known, nothing is started).
func newRig(t *testing.T, minReloadInterval time.Duration, before ...func(*rig)) *rig {
	bin := harness.Nginx(t)
	conn := harness.Bus(t, "test")
	dir := harness.StateDir(t) // short: unix socket paths are limited
	r := &rig{t: t, conn: conn, writer: bus.NewWriter(conn, bus.StageRenderer), prefix: filepath.Join(dir, "nginx"),
		socket: nginx.ControlSocketFor(filepath.Join(dir, "nginx")), port: harness.FreePort(t), results: make(chan bus.ApplyResult, 100)}
	sub, err := conn.NC.Subscribe(bus.ApplyResultSubject, func(m *nats.Msg) {
		var res bus.ApplyResult
		if json.Unmarshal(m.Data, &res) == nil {
			r.results <- res
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	for _, f := range before {
		f(r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	local := nginx.Local{HTTP: []string{fmt.Sprintf("127.0.0.1:%d", r.port)}, HTTPS: []string{fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))},
		ControlSocket: r.socket}
	cfg := applier.Config{NginxBinary: bin, Prefix: r.prefix, Local: local, ShutdownGrace: 5 * time.Second,
		MinReloadInterval: minReloadInterval}
	if os.Geteuid() == 0 {
		w, err := nginx.LookupWorkerUser("nobody")
		if err != nil {
			t.Fatal(err)
		}
		cfg.WorkerUser = &w
	}
	stage := applier.New(conn, cfg, zaptest.NewLogger(t))
	go func() { done <- stage.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("applier: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("applier did not stop")
		}
	})
	return r
}

// config is a small nginx.conf in the shape the renderer writes: the Lua
// endpoint on the socket, and one server answering body on the port.
func (r *rig) config(body string) string { return r.configWithDict(body, "4m") }

// configWithDict is config with the given size of the backends dict.
func (r *rig) configWithDict(body, dict string) string {
	return fmt.Sprintf(`load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
worker_processes 2;
pid nginx.pid;
error_log stderr notice;
events { worker_connections 1024; }
http {
    lua_package_path "$prefix/lua/?.lua;;";
    lua_shared_dict switchyard_config %s;
    lua_shared_dict switchyard_certs 1m;
    lua_shared_dict switchyard_versions 256k;
    init_worker_by_lua_block { require("switchyard.balancer").init_worker() }
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    access_log off;
    server { listen unix:%s; location / { content_by_lua_block { require("switchyard.configuration").call() } } }
    server { listen 127.0.0.1:%d; location / { return 200 "%s"; } }
}
`, dict, r.socket, r.port, body)
}

func (r *rig) publish(files map[string]string, backends ...bus.Backend) {
	r.t.Helper()
	entries := map[string][]byte{}
	for path, content := range files {
		data, _ := json.Marshal(bus.RenderedFile{Path: path, Content: content})
		entries[bus.Key(bus.KindFile, path)] = data
	}
	for _, b := range backends {
		data, _ := json.Marshal(b)
		entries[bus.Key(bus.KindBackend, b.Name)] = data
	}
	r.gen++
	if _, err := r.writer.Publish(context.Background(), bus.Meta{Generation: r.gen}, entries); err != nil {
		r.t.Fatal(err)
	}
}

// result waits for the apply result of the last published generation.
func (r *rig) result() bus.ApplyResult {
	r.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case res := <-r.results:
			if res.Generation == r.gen {
				return res
			}
		case <-timeout:
			r.t.Fatalf("no apply result for generation %d", r.gen)
		}
	}
}

func (r *rig) get() string {
	r.t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", r.port))
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func (r *rig) masterPID() int {
	r.t.Helper()
	data, err := os.ReadFile(filepath.Join(r.prefix, "nginx.pid"))
	if err != nil {
		r.t.Fatal(err)
	}
	var pid int
	fmt.Sscan(strings.TrimSpace(string(data)), &pid)
	return pid
}

func (r *rig) storedBackends() string {
	r.t.Helper()
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", r.socket)
	}}}
	resp, err := client.Get("http://switchyard/configuration/backends")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func TestApplier(t *testing.T) {
	// Each subtest reloads right after the last one: no reload spacing.
	r := newRig(t, -1)
	backend := bus.Backend{Name: "ns-web-80", Endpoints: []bus.Endpoint{{Address: "127.0.0.1", Port: "9"}}}

	r.publish(map[string]string{"nginx.conf": r.config("one")}, backend)
	first := r.result()
	if first.Error != "" || !first.DynamicUpdated || first.ConfigHash == 0 {
		t.Fatalf("first apply: %+v", first)
	}
	// The hash of the running files: a new one after each reload, the
	// same while only the dynamic part or a refused configuration changes.
	runningHash := first.ConfigHash
	if got := r.get(); got != "one" {
		t.Fatalf("served %q, want one", got)
	}
	if !strings.Contains(r.storedBackends(), `"ns-web-80"`) {
		t.Fatalf("backends not pushed: %s", r.storedBackends())
	}
	r.expectSocketPrivate(t)

	t.Run("static change reloads", func(t *testing.T) {
		r.publish(map[string]string{"nginx.conf": r.config("two")}, backend)
		res := r.result()
		if res.Error != "" || !res.Reloaded || res.DynamicUpdated || res.ConfigHash == 0 || res.ConfigHash == runningHash {
			t.Fatalf("apply: %+v (hash before %d)", res, runningHash)
		}
		runningHash = res.ConfigHash
		harness.WaitFor(t, 10*time.Second, "the reloaded configuration", func() error {
			if got := r.get(); got != "two" {
				return fmt.Errorf("served %q", got)
			}
			return nil
		})
	})

	t.Run("endpoint change does not reload", func(t *testing.T) {
		moved := backend
		moved.Endpoints = []bus.Endpoint{{Address: "127.0.0.2", Port: "9"}}
		r.publish(map[string]string{"nginx.conf": r.config("two")}, moved)
		if res := r.result(); res.Error != "" || res.Reloaded || !res.DynamicUpdated || res.ConfigHash != runningHash {
			t.Fatalf("apply: %+v (running hash %d)", res, runningHash)
		}
		if !strings.Contains(r.storedBackends(), "127.0.0.2") {
			t.Fatalf("new endpoint not pushed: %s", r.storedBackends())
		}
	})

	t.Run("rejected configuration keeps the last good one", func(t *testing.T) {
		r.publish(map[string]string{"nginx.conf": r.config("three") + "this is not nginx;\n"}, backend)
		res := r.result()
		if !strings.Contains(res.Error, "nginx -t") || res.Reloaded || res.ConfigHash != runningHash {
			t.Fatalf("apply: %+v (running hash %d)", res, runningHash)
		}
		if got := r.get(); got != "two" {
			t.Fatalf("served %q, want the last good configuration", got)
		}
		live, _ := os.ReadFile(filepath.Join(r.prefix, nginx.ConfDir, "nginx.conf"))
		if strings.Contains(string(live), "not nginx") {
			t.Fatal("the rejected configuration replaced the live one")
		}
		// The dynamic part still went through.
		if !strings.Contains(r.storedBackends(), "127.0.0.1") {
			t.Fatalf("backends not pushed while the configuration was rejected: %s", r.storedBackends())
		}
	})

	t.Run("crashed nginx is restarted with the current state", func(t *testing.T) {
		r.publish(map[string]string{"nginx.conf": r.config("four")}, backend)
		if res := r.result(); res.Error != "" {
			t.Fatalf("apply: %+v", res)
		}
		old := r.masterPID()
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		harness.WaitFor(t, 20*time.Second, "a new NGINX serving the current configuration", func() error {
			data, err := os.ReadFile(filepath.Join(r.prefix, "nginx.pid"))
			if err != nil || strings.TrimSpace(string(data)) == fmt.Sprint(old) {
				return fmt.Errorf("still the old master")
			}
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", r.port))
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "four" {
				return fmt.Errorf("served %q", body)
			}
			return nil
		})
		harness.WaitFor(t, 10*time.Second, "backends pushed to the restarted nginx", func() error {
			if got := r.storedBackends(); !strings.Contains(got, `"ns-web-80"`) {
				return fmt.Errorf("stored backends: %s", got)
			}
			return nil
		})
		// The restarted master made a new socket: private again.
		r.expectSocketPrivate(t)
	})
}

// TestReloadCoalescing sends a burst of static changes, each with an
// endpoint change: NGINX reloads at most twice (the first change at once,
// the rest together at the end of the interval), every endpoint change is
// pushed without waiting for a reload, and the last state wins.
func TestReloadCoalescing(t *testing.T) {
	r := newRig(t, time.Second)
	backend := func(i int) bus.Backend {
		return bus.Backend{Name: "ns-web-80", Endpoints: []bus.Endpoint{{Address: fmt.Sprintf("127.0.1.%d", i), Port: "9"}}}
	}
	r.publish(map[string]string{"nginx.conf": r.config("start")}, backend(0))
	if res := r.result(); res.Error != "" {
		t.Fatalf("first apply: %+v", res)
	}
	const burst = 30
	reloads := 0
	for i := 1; i <= burst; i++ {
		r.publish(map[string]string{"nginx.conf": r.config(fmt.Sprintf("burst-%d", i))}, backend(i))
		res := r.result()
		if res.Error != "" || !res.DynamicUpdated {
			t.Fatalf("apply %d: %+v", i, res)
		}
		if res.Reloaded {
			reloads++
		} else if !res.ReloadPending {
			t.Fatalf("apply %d neither reloaded nor waits for a reload: %+v", i, res)
		}
		// The endpoint change is live before any reload brings the files.
		if got := r.storedBackends(); !strings.Contains(got, fmt.Sprintf("127.0.1.%d", i)) {
			t.Fatalf("endpoint of change %d not pushed at once: %s", i, got)
		}
		time.Sleep(10 * time.Millisecond)
	}
	harness.WaitFor(t, 10*time.Second, "the last configuration of the burst", func() error {
		if got := r.get(); got != fmt.Sprintf("burst-%d", burst) {
			return fmt.Errorf("served %q", got)
		}
		return nil
	})
	// The slot's reload comes as one more result for the last generation.
	for {
		select {
		case res := <-r.results:
			if res.Reloaded {
				reloads++
			}
			continue
		case <-time.After(300 * time.Millisecond):
		}
		break
	}
	t.Logf("%d static changes, %d reloads", burst, reloads)
	if reloads > 2 {
		t.Fatalf("%d changes within about %v reloaded NGINX %d times, want at most 2", burst, burst*10*time.Millisecond, reloads)
	}
	if reloads == 0 {
		t.Fatal("no reload at all")
	}
}

// TestDictResizePushesAgain: a reload that resizes the Lua dicts gives the
// new workers new, empty dicts; the applier pushes the dynamic part again,
// to a worker with the new sizes, so the backends are not lost.
func TestDictResizePushesAgain(t *testing.T) {
	r := newRig(t, -1)
	backend := bus.Backend{Name: "ns-web-80", Endpoints: []bus.Endpoint{{Address: "127.0.0.1", Port: "9"}}}
	r.publish(map[string]string{"nginx.conf": r.config("small")}, backend)
	if res := r.result(); res.Error != "" {
		t.Fatalf("first apply: %+v", res)
	}
	r.publish(map[string]string{"nginx.conf": r.configWithDict("large", "8m")}, backend)
	if res := r.result(); res.Error != "" || !res.Reloaded {
		t.Fatalf("resizing apply: %+v", res)
	}
	harness.WaitFor(t, 10*time.Second, "the resized configuration", func() error {
		if got := r.get(); got != "large" {
			return fmt.Errorf("served %q", got)
		}
		return nil
	})
	if got := r.storedBackends(); !strings.Contains(got, `"ns-web-80"`) {
		t.Fatalf("after the resize the new workers have no backends: %s", got)
	}
}

// TestLeftoverNginxIsReplaced: an NGINX an earlier controller left running
// on the prefix (holding the ports) is stopped, and a fresh one serves the
// new configuration: no NGINX is left that nobody runs.
func TestLeftoverNginxIsReplaced(t *testing.T) {
	leftover := make(chan error, 1)
	r := newRig(t, -1, func(r *rig) {
		if err := nginx.PreparePrefix(r.prefix); err != nil {
			t.Fatal(err)
		}
		harness.WriteFile(t, filepath.Join(r.prefix, nginx.ConfDir, "nginx.conf"), r.config("leftover"))
		if err := os.MkdirAll(filepath.Dir(r.socket), 0o700); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(harness.Nginx(t), "-p", r.prefix+"/", "-c", "conf/nginx.conf", "-e", "stderr", "-g", "daemon off; master_process on;")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { leftover <- cmd.Wait() }()
		t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
		harness.WaitFor(t, 20*time.Second, "the leftover NGINX to serve", func() error {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/", r.port))
			if err != nil {
				return err
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != "leftover" {
				return fmt.Errorf("served %q", body)
			}
			return nil
		})
	})
	r.publish(map[string]string{"nginx.conf": r.config("fresh")})
	if res := r.result(); res.Error != "" {
		t.Fatalf("apply: %+v", res)
	}
	select {
	case <-leftover:
	case <-time.After(30 * time.Second):
		t.Fatal("the leftover NGINX still runs")
	}
	if got := r.get(); got != "fresh" {
		t.Fatalf("served %q, want fresh", got)
	}
}

// TestTableWithoutMainFileIsRefused: a renderer table without nginx.conf
// (a stream that came back with only some of the renderer's keys) is not
// applied at all: the result says why, NGINX keeps serving the last good
// configuration, and the backends that came with it are not pushed. The
// next whole table is applied.
func TestTableWithoutMainFileIsRefused(t *testing.T) {
	r := newRig(t, -1)
	backend := bus.Backend{Name: "ns-web-80", Endpoints: []bus.Endpoint{{Address: "127.0.0.1", Port: "9"}}}
	r.publish(map[string]string{"nginx.conf": r.config("one")}, backend)
	first := r.result()
	if first.Error != "" {
		t.Fatalf("first apply: %+v", first)
	}

	moved := backend
	moved.Endpoints = []bus.Endpoint{{Address: "127.0.0.2", Port: "9"}}
	r.publish(map[string]string{"servers/a.conf": "# a\n"}, moved)
	res := r.result()
	if !strings.Contains(res.Error, "has no nginx.conf") || res.Reloaded || res.DynamicUpdated || res.ConfigHash != first.ConfigHash {
		t.Fatalf("apply of a table without nginx.conf: %+v (running hash %d)", res, first.ConfigHash)
	}
	if got := r.get(); got != "one" {
		t.Fatalf("served %q, want the last good configuration", got)
	}
	if got := r.storedBackends(); strings.Contains(got, "127.0.0.2") || !strings.Contains(got, "127.0.0.1") {
		t.Fatalf("backends of the refused table pushed: %s", got)
	}

	r.publish(map[string]string{"nginx.conf": r.config("two")}, moved)
	if res := r.result(); res.Error != "" || !res.Reloaded {
		t.Fatalf("apply after the refused table: %+v", res)
	}
	harness.WaitFor(t, 10*time.Second, "the next whole configuration", func() error {
		if got := r.get(); got != "two" {
			return fmt.Errorf("served %q", got)
		}
		return nil
	})
}
