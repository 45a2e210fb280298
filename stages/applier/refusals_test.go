package applier_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// refusals follows the refusals table as the renderer does.
func (r *rig) refusals() func() map[string]bus.Refusal {
	ctx, cancel := context.WithCancel(context.Background())
	r.t.Cleanup(cancel)
	latest := make(chan map[string]bus.Refusal, 1)
	table := bus.RefusalTable{}
	go func() {
		_ = bus.Follow(ctx, r.conn, bus.TableRefusals, func(_ context.Context, snap bus.Snapshot) error {
			table.Update(snap)
			view := maps.Clone(map[string]bus.Refusal(table))
			select {
			case <-latest:
			default:
			}
			latest <- view
			return nil
		})
	}()
	var last map[string]bus.Refusal
	return func() map[string]bus.Refusal {
		select {
		case v := <-latest:
			last = v
		default:
		}
		return last
	}
}

// getHost asks the test server on r.port for host.
func (r *rig) getHost(host, path string) (int, string) {
	req, _ := http.NewRequest("GET", fmt.Sprintf("http://127.0.0.1:%d%s", r.port, path), nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// withServers is the rig's nginx.conf with extra http-level lines and the
// server files included.
func (r *rig) withServers(extra string) string {
	return strings.Replace(r.config("catch-all"), "    access_log off;\n",
		"    access_log off;\n"+extra+"    include servers/*.conf;\n", 1)
}

func (r *rig) server(host, source, body, extra string) string {
	return fmt.Sprintf(`# source ingress %[2]s rev=0123456789ab
server {
    listen 127.0.0.1:%[1]d;
    server_name %[3]s;
    # source ingress %[2]s rev=0123456789ab
    location / {
%[5]s        return 200 "%[4]s";
    }
}
`, r.port, source, host, body, extra)
}

// TestRefusalTracedToItsSource feeds the applier configurations NGINX
// refuses, with the renderer's attribution comments, and plays the
// renderer's answer: the refusal names the Ingress or ConfigMap key, and
// once the renderer leaves it out, every other host is served.
func TestRefusalTracedToItsSource(t *testing.T) {
	r := newRig(t, -1)
	refusals := r.refusals()
	good := r.server("a.test", "team-a/web", "a", "")
	bad := r.server("x.test", "team-x/broken", "x", "        no_such_directive on;\n")

	// At start: nothing good ran before.
	r.publish(map[string]string{"nginx.conf": r.withServers(""), "servers/a.conf": good, "servers/x.conf": bad})
	if res := r.result(); !strings.Contains(res.Error, "team-x/broken") {
		t.Fatalf("apply: %+v, want the refused Ingress named", res)
	}
	var ref bus.Refusal
	harness.WaitFor(t, 10*time.Second, "the Ingress's refusal", func() error {
		var ok bool
		if ref, ok = refusals()[bus.RefusalKey(bus.RefusedIngress, "team-x/broken")]; !ok {
			return fmt.Errorf("refusals: %v", refusals())
		}
		return nil
	})
	if ref.Rev != "0123456789ab" || ref.File != "servers/x.conf" || ref.Line != 7 ||
		!strings.Contains(ref.Message, `unknown directive "no_such_directive"`) || strings.Contains(ref.Message, r.prefix) {
		t.Fatalf("refusal %+v", ref)
	}

	// The renderer's answer: the same files without the Ingress, saying so.
	honoured := "# refused ingress team-x/broken rev=0123456789ab\n"
	r.publish(map[string]string{"nginx.conf": honoured + r.withServers(""), "servers/a.conf": good})
	if res := r.result(); res.Error != "" {
		t.Fatalf("apply without the refused Ingress: %+v", res)
	}
	if code, body := r.getHost("a.test", "/"); code != 200 || body != "a" {
		t.Fatalf("a.test: %d %q", code, body)
	}
	if _, ok := refusals()[bus.RefusalKey(bus.RefusedIngress, "team-x/broken")]; !ok {
		t.Fatal("the refusal went while the renderer still honours it")
	}

	t.Run("a ConfigMap key, found by the value NGINX quotes", func(t *testing.T) {
		logFormat := "    # source configmap log-format-upstream rev=abcdefabcdef\n" +
			"    log_format upstreaminfo '$remote_addr $no_such_var';\n    # source switchyard\n"
		r.publish(map[string]string{"nginx.conf": honoured + r.withServers(logFormat), "servers/a.conf": good})
		if res := r.result(); !strings.Contains(res.Error, "log-format-upstream") {
			t.Fatalf("apply: %+v", res)
		}
		harness.WaitFor(t, 10*time.Second, "the key's refusal", func() error {
			got, ok := refusals()[bus.RefusalKey(bus.RefusedConfigMap, "log-format-upstream")]
			if !ok || got.Rev != "abcdefabcdef" || got.File != "nginx.conf" || !strings.Contains(got.Message, "no_such_var") {
				return fmt.Errorf("refusals: %+v", refusals())
			}
			return nil
		})
		if code, body := r.getHost("a.test", "/"); code != 200 || body != "a" {
			t.Fatalf("a.test while the key is refused: %d %q", code, body)
		}
	})

	t.Run("a refusal ends once the source passes", func(t *testing.T) {
		fixed := r.server("x.test", "team-x/broken", "x", "")
		r.publish(map[string]string{"nginx.conf": r.withServers(""), "servers/a.conf": good, "servers/x.conf": fixed})
		if res := r.result(); res.Error != "" {
			t.Fatalf("apply: %+v", res)
		}
		harness.WaitFor(t, 10*time.Second, "no refusals", func() error {
			if len(refusals()) != 0 {
				return fmt.Errorf("refusals: %v", refusals())
			}
			return nil
		})
		harness.WaitFor(t, 10*time.Second, "x.test served after the reload", func() error {
			if code, body := r.getHost("x.test", "/"); code != 200 || body != "x" {
				return fmt.Errorf("x.test: %d %q", code, body)
			}
			return nil
		})
	})

	t.Run("a refusal that names no source keeps the last good configuration", func(t *testing.T) {
		r.publish(map[string]string{"nginx.conf": r.withServers("    # source switchyard\n    no_such_directive on;\n"),
			"servers/a.conf": good})
		if res := r.result(); !strings.Contains(res.Error, "keeping the last good one") {
			t.Fatalf("apply: %+v", res)
		}
		if code, body := r.getHost("x.test", "/"); code != 200 || body != "x" {
			t.Fatalf("x.test: %d %q", code, body)
		}
	})
}
