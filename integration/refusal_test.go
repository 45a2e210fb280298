package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// refusalsLogged are the applier's refusal log lines: source name →
// NGINX's message.
func refusalsLogged(output string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		_, fields, ok := strings.Cut(sc.Text(), "\tnginx refused the configuration of one source; rendering again without it\t")
		if !ok {
			continue
		}
		var line struct{ Kind, Name, Nginx string }
		if json.Unmarshal([]byte(fields), &line) == nil {
			out[line.Kind+" "+line.Name] = line.Nginx
		}
	}
	return out
}

func waitRefusalLogged(t *testing.T, sy *harness.Switchyard, source, message string) {
	t.Helper()
	harness.WaitFor(t, changeTimeout, "the refusal of "+source+" logged", func() error {
		got := refusalsLogged(sy.Output.String())
		if msg, ok := got[source]; !ok || !strings.Contains(msg, message) {
			return fmt.Errorf("refusals logged: %v", got)
		}
		return nil
	})
}

// TestConfigMapValuesNginxRefusesAtStart: a log format naming an unknown
// variable and a cipher list OpenSSL does not know pass the settings
// parser, and NGINX refuses both (one per nginx -t: it stops at the
// first). Present at start, they are traced to their keys, which fall back
// to their defaults; NGINX starts and serves every host.
func TestConfigMapValuesNginxRefusesAtStart(t *testing.T) {
	e := newBackends(t)
	e.write("a.yaml", harness.IngressYAML("default", "a", "a.test", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.write("b.yaml", harness.IngressYAML("default", "b", "b.test", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	e.write("config.yaml", configMapYAML(map[string]string{
		"log-format-upstream": `$remote_addr $no_such_var "$request"`,
		"ssl-ciphers":         "NOPE-CIPHER",
	}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	e.eventually("a.test", "/", "a.test served", servedBy("a-1"))
	e.eventually("b.test", "/", "b.test served", servedBy("b-1"))
	waitRefusalLogged(t, e.sy, "configmap ssl-ciphers", "NOPE-CIPHER")
	waitRefusalLogged(t, e.sy, "configmap log-format-upstream", `unknown "no_such_var" variable`)
	live, err := os.ReadFile(filepath.Join(e.sy.Prefix(), "conf", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"log_format upstreaminfo '" + bus.DefaultLogFormatUpstream + "';", "ssl_ciphers \"" + bus.DefaultSettings().SSLCiphers + "\";",
		"# refused configmap ssl-ciphers rev=", "# refused configmap log-format-upstream rev="} {
		if !strings.Contains(string(live), want) {
			t.Errorf("the running nginx.conf lacks %q", want)
		}
	}
	if r, err := e.sy.GetTLS("a.test", "/"); err != nil || r.Status != 200 {
		t.Errorf("HTTPS with the default ciphers: %v %v", r.Status, err)
	}

	// A corrected value is tried again and applied.
	e.write("config.yaml", configMapYAML(map[string]string{"log-format-upstream": `$remote_addr fixed "$request"`, "ssl-ciphers": "NOPE-CIPHER"}))
	harness.WaitFor(t, changeTimeout, "the corrected log format applied", func() error {
		live, _ := os.ReadFile(filepath.Join(e.sy.Prefix(), "conf", "nginx.conf"))
		if !strings.Contains(string(live), `log_format upstreaminfo '$remote_addr fixed "$request"';`) {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	e.eventually("b.test", "/", "b.test still served", servedBy("b-1"))
}

// TestIngressNginxRefuses: an Ingress whose location NGINX refuses (a
// directive injected by the test-only SWITCHYARD_TEST_REFUSE_INGRESS, as
// the regex paths that did it are no longer accepted) is traced to that
// Ingress and left out, at start and when added while running; every
// other host, and every later change, is served.
func TestIngressNginxRefuses(t *testing.T) {
	t.Setenv("SWITCHYARD_TEST_REFUSE_INGRESS", "default/broken,other/late")
	prefix := func(svc string) harness.Path { return harness.Path{Path: "/", Type: "Prefix", Service: svc} }
	e := newEnv(t, map[string]string{
		"a.yaml":      harness.IngressYAML("default", "a", "a.test", prefix("echo-a")),
		"b.yaml":      harness.IngressYAML("default", "b", "b.test", prefix("echo-b")),
		"broken.yaml": harness.IngressYAML("default", "broken", "broken.test", prefix("echo-a")),
		// The refused Ingress also shares a host with a good one.
		"shared.yaml": harness.IngressYAML("default", "broken", "b.test", harness.Path{Path: "/broken", Type: "Prefix", Service: "echo-a"}),
	})
	e.eventually("a.test", "/", "a.test served", servedBy("a-1"))
	e.eventually("b.test", "/", "b.test served", servedBy("b-1"))
	waitRefusalLogged(t, e.sy, "ingress default/broken", `unknown directive "switchyard_test_refused_directive"`)
	e.eventually("broken.test", "/", "the refused Ingress's host not served", status(404))
	e.eventually("b.test", "/broken", "the refused Ingress's path on a shared host not served", servedBy("b-1"))

	// Added while running: refused too, and later changes still apply.
	e.write("late.yaml", harness.ServiceYAML("other", "echo-b", e.portB)+"---\n"+
		harness.IngressYAML("other", "late", "late.test", prefix("echo-b")))
	waitRefusalLogged(t, e.sy, "ingress other/late", "switchyard_test_refused_directive")
	e.write("c.yaml", harness.IngressYAML("default", "c", "c.test", prefix("echo-b")))
	e.eventually("c.test", "/", "a later Ingress served", servedBy("b-1"))
	e.eventually("a.test", "/", "a.test still served", servedBy("a-1"))
}
