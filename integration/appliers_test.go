package integration

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestTwoAppliersOnOneHost runs two appliers of one pipeline on the same
// host, each with its own --http-addr, --https-addr and --state-dir (its
// NGINX prefix and control socket), while the renderer was given other
// addresses still: both serve every Ingress on their own ports, a change
// reaches both, and ssl-redirect sends each client to its own applier's
// HTTPS port.
func TestTwoAppliersOnOneHost(t *testing.T) {
	harness.Nginx(t)
	ns := harness.StartNATS(t)
	procs := newStageProcs(t, "--nats", ns.ClientURL(), "--nats-keys", ns.Keys)
	harness.WriteFile(t, filepath.Join(procs.dir, "redirect.yaml"), harness.AnnotatedIngressYAML("default", "redirect", "redirect.example.com",
		map[string]string{"nginx.ingress.kubernetes.io/force-ssl-redirect": "true"}, harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	for _, name := range []string{"renderer", "annotations", "translator", "watcher"} {
		// The renderer's own addresses are nobody's: the appliers' count.
		procs.start(name, "--instance", name+"-1", "--http-addr", "127.0.0.1:1", "--https-addr", "127.0.0.1:2")
	}
	type applier struct{ http, https string }
	var appliers []applier
	for i := 1; i <= 2; i++ {
		a := applier{http: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)), https: fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}
		procs.start("applier", "--instance", fmt.Sprintf("applier-%d", i), "--http-addr", a.http, "--https-addr", a.https,
			"--state-dir", harness.StateDir(t))
		appliers = append(appliers, a)
	}
	client, tlsClient := harness.NewClient(), harness.NewClient()
	tlsClient.Transport.(*http.Transport).TLSClientConfig.ServerName = "one.example.com"
	served := func(a applier, host string) func() error {
		return func() error {
			r, err := harness.Do(client, "GET", "http://"+a.http+"/", host, nil)
			if err == nil && !servedBy("a-1")(r) {
				err = fmt.Errorf("%s: status %d", a.http, r.Status)
			}
			return err
		}
	}
	for _, a := range appliers {
		harness.WaitFor(t, 90*time.Second, "traffic through applier on "+a.http, served(a, "one.example.com"))
		harness.WaitFor(t, 30*time.Second, "HTTPS through applier on "+a.https, func() error {
			r, err := harness.Do(tlsClient, http.MethodGet, "https://"+a.https+"/", "one.example.com", nil)
			if err == nil && !servedBy("a-1")(r) {
				err = fmt.Errorf("%s: status %d", a.https, r.Status)
			}
			return err
		})
		harness.WaitFor(t, 30*time.Second, "ssl-redirect to this applier's HTTPS port", func() error {
			r, err := harness.Do(client, "GET", "http://"+a.http+"/x", "redirect.example.com", nil)
			if err != nil {
				return err
			}
			_, port, _ := strings.Cut(a.https, ":")
			if want := "https://redirect.example.com:" + port + "/x"; r.Status != http.StatusPermanentRedirect || r.Header.Get("Location") != want {
				return fmt.Errorf("status %d, Location %q; want 308 to %s", r.Status, r.Header.Get("Location"), want)
			}
			return nil
		})
	}
	procs.ingress("two")
	for _, a := range appliers {
		harness.WaitFor(t, 60*time.Second, "a change through applier on "+a.http, served(a, "two.example.com"))
	}
}
