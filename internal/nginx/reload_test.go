package nginx_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/nginx"
)

// TestReloadConfirmedServesOnlyTheNewConfiguration: once ReloadConfirmed
// returns, every new connection gets the new configuration. With
// reuseport, an old worker keeps accepting until it handles the master's
// QUIT, which the master sends 100 ms after it started the new workers.
func TestReloadConfirmedServesOnlyTheNewConfiguration(t *testing.T) {
	bin := harness.Nginx(t)
	prefix := t.TempDir()
	if err := os.Chmod(prefix, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"conf", "logs", "tmp"} {
		if err := os.MkdirAll(filepath.Join(prefix, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	addr := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	write := func(answer string) {
		conf := fmt.Sprintf(`worker_processes 2;
pid nginx.pid;
error_log stderr notice;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    server {
        listen %s reuseport;
        location / { return 200 %q; }
    }
}
`, addr, answer)
		if err := os.WriteFile(filepath.Join(prefix, "conf", nginx.MainFile), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("v0")
	p, err := nginx.Start(bin, prefix, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(5 * time.Second) })
	client := harness.NewClient()
	get := func() string {
		resp, err := client.Get("http://" + addr + "/")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	for deadline := time.Now().Add(10 * time.Second); get() != "v0"; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("nginx does not serve")
		}
	}
	for i := 1; i <= 3; i++ {
		want := fmt.Sprintf("v%d", i)
		write(want)
		if err := p.ReloadConfirmed(context.Background(), 30*time.Second); err != nil {
			t.Fatal(err)
		}
		for n := 0; n < 50; n++ {
			if got := get(); got != want {
				t.Fatalf("reload %d: request %d on a new connection got %q, want %q", i, n, got, want)
			}
		}
	}
}
