package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

func startLuaRoutedExtra(t *testing.T, f *fixture, hosts int, extra ...string) (*harness.Switchyard, time.Duration) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"class.yaml", "service.yaml", "ingress.yaml"} {
		data, err := os.ReadFile(filepath.Join(f.dir, name))
		if err != nil {
			t.Fatal(err)
		}
		harness.WriteFile(t, filepath.Join(dir, name), string(data))
	}
	if hosts > 1 {
		writeScaleManifests(t, dir, hosts-1, f.portA)
	}
	begin := time.Now()
	lua := startScaled(t, dir, append([]string{"--lua-routing=true", "--metrics-addr", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}, extra...)...)
	for _, host := range []string{f.host, scaleHost(hosts - 2)} {
		if host == scaleHost(-1) {
			continue // the host alone
		}
		if _, err := waitAnswer(lua.HTTPAddr, host, "/", "", startupPoll, startupTimeout); err != nil {
			t.Fatalf("lua-routed %s: %v", host, err)
		}
	}
	ready := time.Since(begin)
	if _, err := os.Stat(filepath.Join(lua.ConfDir(), "servers", "bench_2eexample_2ecom.conf")); err == nil {
		t.Fatalf("%s has a server block with --lua-routing", f.host)
	}
	return lua, ready
}
