// Package harness holds what Switchyard's tests share: finding the real
// NGINX, preparing a prefix for it, and checking a configuration with nginx -t.
package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"switchyard.dev/switchyard/internal/nginx"
)

// RequireEnv makes a missing NGINX a failure instead of a skip. `make test`
// sets it, so CI can never pass by skipping the real data plane.
const RequireEnv = "SWITCHYARD_REQUIRE_NGINX"

// ModulesDir is where Debian installs NGINX's dynamic modules.
const ModulesDir = "/usr/lib/nginx/modules"

// Nginx returns the path of the nginx binary with the Lua module, or skips
// the test (fails it when RequireEnv is set).
func Nginx(t testing.TB) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err == nil {
		bin, err = filepath.Abs(bin)
	}
	if err == nil {
		_, err = os.Stat(filepath.Join(ModulesDir, "ngx_http_lua_module.so"))
	}
	if err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("nginx with the Lua module is required (%s is set): %v; run make deps", RequireEnv, err)
		}
		t.Skipf("nginx with the Lua module not found (%v); run make deps", err)
	}
	return bin
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
	if _, err := nginx.TestConfig(bin, prefix, nginx.ConfDir); err != nil {
		t.Fatalf("nginx -t failed: %v", err)
	}
}
