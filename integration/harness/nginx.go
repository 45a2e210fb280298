// Package harness holds what Switchyard's tests share: finding the real
// NGINX, preparing a prefix for it, and checking a configuration with nginx -t.
package harness

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"switchyard.dev/switchyard/internal/nginx"
)

// RequireEnv makes a missing NGINX a failure instead of a skip. `make test`
// sets it, so CI can never pass by skipping the real data plane.
const RequireEnv = "SWITCHYARD_REQUIRE_NGINX"

// ModulesDir is where Debian installs NGINX's dynamic modules.
const ModulesDir = "/usr/lib/nginx/modules"

// requiredModules are the dynamic modules the rendered configurations
// load: the Lua module, and njs for the stream module (TLS passthrough's
// endpoints, libnginx-mod-stream-js).
var requiredModules = []string{"ngx_http_lua_module.so", "ngx_stream_js_module.so"}

// Nginx returns the path of the nginx binary with the Lua and the stream
// njs modules, or skips the test (fails it when RequireEnv is set).
func Nginx(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	for _, m := range requiredModules {
		if err == nil {
			_, err = os.Stat(filepath.Join(ModulesDir, m))
		}
	}
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("nginx with the Lua and stream njs modules is required (%s is set): %v; run make deps", RequireEnv, err)
		}
		t.Skipf("nginx with the Lua and stream njs modules not found (%v); run make deps", err)
	}
	return bin
}

// RunNginx runs NGINX in the foreground on a hand-written configuration
// (conf, with "{{dir}}" standing for its prefix; its pid file and error
// log are set here) and files (paths relative
// to the prefix) until the test ends; on failure the test logs NGINX's
// error log. The prefix is open to the workers, which run as nobody when
// the test runs as root. It returns the prefix.
func RunNginx(t testing.TB, conf string, files map[string]string) string {
	t.Helper()
	bin := Nginx(t)
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	files["nginx.conf"] = "pid {{dir}}/nginx.pid;\nerror_log {{dir}}/logs/error.log info;\n" + conf
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		WriteFile(t, path, strings.ReplaceAll(content, "{{dir}}", dir))
	}
	cmd := exec.Command(bin, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"), "-g", "daemon off;")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM: the master stops its workers before it exits.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "logs", "error.log"))
			t.Logf("NGINX's error log:\n%s", log)
		}
	})
	return dir
}

// Prefix makes a temporary NGINX prefix with Lua modules and a default
// certificate, and writes files (paths relative to the conf directory).
func Prefix(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := nginx.PreparePrefix(dir); err != nil {
		t.Fatal(err)
	}
	local := Local(dir)
	for _, socket := range append(local.InternalSockets(), local.ControlSocket) {
		if err := os.MkdirAll(filepath.Dir(socket), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range files {
		content = local.Localize(content)
		path := filepath.Join(dir, nginx.ConfDir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// Local is the data plane Prefix fills into rendered files, as an applier
// would: the default ports, and the sockets below the prefix.
func Local(prefix string) nginx.Local {
	return nginx.LocalFor(prefix, []string{"127.0.0.1:8080"}, []string{"127.0.0.1:8443"}, true)
}

// NginxTest runs nginx -t on the prefix's configuration and fails the test
// with NGINX's own words when it does not pass.
func NginxTest(t testing.TB, bin, prefix string) {
	t.Helper()
	if _, err := nginx.TestConfig(context.Background(), bin, prefix, nginx.ConfDir); err != nil {
		t.Fatalf("nginx -t failed: %v", err)
	}
}
