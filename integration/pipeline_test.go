// Integration tests: the real switchyard binary, real NGINX with the Lua
// module, real echo backends, traffic on loopback only.
package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// changeTimeout bounds how long a change may take to reach traffic. Generous:
// under a loaded machine a large configuration's nginx -t and reload take
// seconds each; a passing test never waits it out.
const changeTimeout = 30 * time.Second

// env is a manifests dir with two echo Services and a running switchyard.
type env struct {
	t      *testing.T
	dir    string
	sy     *harness.Switchyard
	portA  int
	portB  int
	portA2 int
}

func newEnv(t *testing.T, files map[string]string) *env {
	t.Helper()
	e := newBackends(t)
	e.portA2 = harness.StartEcho(t, harness.Binary(t), "echo-a", "a-2")
	for name, content := range files {
		e.write(name, content)
	}
	e.sy = harness.StartSwitchyard(t, e.dir)
	return e
}

// newBackends starts echo-a (pod a-1) and echo-b (pod b-1) and writes the
// IngressClass and their Services in namespace default; Switchyard is not
// started yet.
func newBackends(t *testing.T) *env {
	t.Helper()
	bin := harness.Binary(t)
	e := &env{t: t, dir: t.TempDir()}
	e.portA = harness.StartEcho(t, bin, "echo-a", "a-1")
	e.portB = harness.StartEcho(t, bin, "echo-b", "b-1")
	e.write("class.yaml", harness.ClassYAML)
	e.write("services.yaml", harness.ServiceYAML("default", "echo-a", e.portA)+"---\n"+harness.ServiceYAML("default", "echo-b", e.portB))
	return e
}

func (e *env) write(name, content string) {
	harness.WriteFile(e.t, filepath.Join(e.dir, name), content)
}

// eventually polls host+path until check accepts the response.
func (e *env) eventually(host, path, what string, check func(harness.Response) bool) harness.Response {
	e.t.Helper()
	return e.eventuallyWithHeaders(host, path, nil, what, check)
}

// eventuallyWithHeaders polls host+path, sending headers, until check accepts
// the response.
func (e *env) eventuallyWithHeaders(host, path string, headers map[string]string, what string, check func(harness.Response) bool) harness.Response {
	e.t.Helper()
	var last harness.Response
	harness.WaitFor(e.t, changeTimeout, what, func() error {
		r, err := harness.DoWithHeaders(harness.NewClient(), http.MethodGet, "http://"+e.sy.HTTPAddr+path, host, headers)
		if err != nil {
			return err
		}
		last = r
		if !check(r) {
			return fmt.Errorf("got %d %s", r.Status, truncate(r.Body))
		}
		return nil
	})
	return last
}

func servedBy(pod string) func(harness.Response) bool {
	return func(r harness.Response) bool { return r.Status == 200 && r.Echo != nil && r.Echo.Pod == pod }
}

func status(code int) func(harness.Response) bool {
	return func(r harness.Response) bool { return r.Status == code }
}

func truncate(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

func TestRoutesServed(t *testing.T) {
	e := newEnv(t, map[string]string{"ingress.yaml": harness.IngressYAML("default", "shop", "shop.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"},
		harness.Path{Path: "/b", Type: "Prefix", Service: "echo-b"},
		harness.Path{Path: "/exact", Type: "Exact", Service: "echo-b"},
	)})
	cases := []struct {
		name, host, path string
		wantStatus       int
		wantPod          string
	}{
		{"root prefix", "shop.example.com", "/anything?q=1", 200, "a-1"},
		{"prefix matches the element", "shop.example.com", "/b", 200, "b-1"},
		{"prefix matches below the element", "shop.example.com", "/b/c", 200, "b-1"},
		{"prefix does not match a longer element", "shop.example.com", "/bc", 200, "a-1"},
		{"exact", "shop.example.com", "/exact", 200, "b-1"},
		{"exact has no trailing-slash tolerance", "shop.example.com", "/exact/", 200, "a-1"},
		{"host is case-insensitive", "SHOP.Example.COM", "/b", 200, "b-1"},
		{"unknown host gets the default server", "nobody.example.com", "/", 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := e.sy.Get(c.host, c.path)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != c.wantStatus {
				t.Fatalf("status %d, want %d: %s", r.Status, c.wantStatus, truncate(r.Body))
			}
			if c.wantPod != "" && (r.Echo == nil || r.Echo.Pod != c.wantPod) {
				t.Fatalf("served by %+v, want pod %s", r.Echo, c.wantPod)
			}
		})
	}

	t.Run("proxy headers", func(t *testing.T) {
		r, err := e.sy.Get("shop.example.com", "/headers?x=1")
		if err != nil || r.Echo == nil {
			t.Fatalf("%v %+v", err, r)
		}
		h := r.Echo.Headers
		want := map[string]string{
			"X-Forwarded-For": "127.0.0.1", "X-Real-Ip": "127.0.0.1", "X-Forwarded-Proto": "http",
			"X-Forwarded-Host": "shop.example.com", "X-Forwarded-Port": strings.Split(e.sy.HTTPAddr, ":")[1],
		}
		for k, v := range want {
			if got := strings.Join(h[k], ","); got != v {
				t.Errorf("%s = %q, want %q", k, got, v)
			}
		}
		if len(h["X-Request-Id"]) != 1 || len(h["X-Request-Id"][0]) != 32 {
			t.Errorf("X-Request-Id = %q, want a 32-digit id", h["X-Request-Id"])
		}
		if r.Echo.Path != "/headers?x=1" || r.Echo.Host != "shop.example.com" {
			t.Errorf("path %q host %q", r.Echo.Path, r.Echo.Host)
		}
	})

	t.Run("body above the buffer size is spooled by the workers", func(t *testing.T) {
		r, err := harness.Do(harness.NewClient(), "POST", "http://"+e.sy.HTTPAddr+"/upload", "shop.example.com", make([]byte, 512<<10))
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 200 || r.Echo == nil || r.Echo.Method != "POST" {
			t.Fatalf("status %d, want 200 from the backend: %s", r.Status, truncate(r.Body))
		}
	})

	t.Run("body over 1m is refused", func(t *testing.T) {
		r, err := harness.Do(harness.NewClient(), "POST", "http://"+e.sy.HTTPAddr+"/upload", "shop.example.com", make([]byte, 1<<20+1))
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 413 {
			t.Fatalf("status %d, want 413", r.Status)
		}
	})
}

func TestNewIngressFileIsServed(t *testing.T) {
	e := newEnv(t, nil)
	if r, _ := e.sy.Get("new.example.com", "/"); r.Status != 404 {
		t.Fatalf("before the Ingress exists: status %d, want 404", r.Status)
	}
	e.write("new.yaml", harness.IngressYAML("default", "new", "new.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	e.eventually("new.example.com", "/", "the new Ingress to be served", servedBy("b-1"))
}

func TestEndpointChangeDoesNotReload(t *testing.T) {
	e := newEnv(t, map[string]string{"ingress.yaml": harness.IngressYAML("default", "app", "app.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})})
	e.eventually("app.example.com", "/", "the first endpoint", servedBy("a-1"))
	workers := e.sy.WorkerPIDs(t)
	if len(workers) != 2 {
		t.Fatalf("want 2 NGINX workers, got %v", workers)
	}

	// Scale echo-a from a-1 to a-2: a new EndpointSlice, the old one gone.
	e.write("services.yaml", harness.ServiceYAML("default", "echo-a", e.portA2)+"---\n"+harness.ServiceYAML("default", "echo-b", e.portB))
	e.eventually("app.example.com", "/", "traffic on the new endpoint", servedBy("a-2"))
	// Every worker follows: a run of fresh connections all reach a-2.
	for i := 0; i < 20; i++ {
		if r, err := e.sy.Get("app.example.com", "/"); err != nil || !servedBy("a-2")(r) {
			t.Fatalf("request %d after the change: %v %d %+v", i, err, r.Status, r.Echo)
		}
	}
	if after := e.sy.WorkerPIDs(t); !slices.Equal(sorted(workers), sorted(after)) {
		t.Fatalf("NGINX reloaded on an endpoint change: workers %v, then %v", workers, after)
	}

	// Both endpoints ready: round robin uses both.
	e.write("services.yaml", harness.ServiceYAML("default", "echo-a", e.portA, e.portA2)+"---\n"+harness.ServiceYAML("default", "echo-b", e.portB))
	seen := map[string]bool{}
	harness.WaitFor(t, changeTimeout, "both endpoints in rotation", func() error {
		r, err := e.sy.Get("app.example.com", "/")
		if err == nil && r.Echo != nil {
			seen[r.Echo.Pod] = true
		}
		if !seen["a-1"] || !seen["a-2"] {
			return fmt.Errorf("seen %v", seen)
		}
		return nil
	})

	// No ready endpoint: 503 for that path.
	e.write("services.yaml", harness.ServiceYAML("default", "echo-a")+"---\n"+harness.ServiceYAML("default", "echo-b", e.portB))
	e.eventually("app.example.com", "/", "503 without endpoints", status(503))
	if after := e.sy.WorkerPIDs(t); !slices.Equal(sorted(workers), sorted(after)) {
		t.Fatalf("NGINX reloaded on an endpoint change: workers %v, then %v", workers, after)
	}
}

func TestBrokenFileKeepsEverythingServed(t *testing.T) {
	one := harness.IngressYAML("default", "one", "one.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})
	two := harness.IngressYAML("default", "two", "two.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"})
	e := newEnv(t, map[string]string{"one.yaml": one, "two.yaml": two})
	e.eventually("two.example.com", "/", "two served", servedBy("b-1"))

	// two.yaml breaks: its objects stay served, and so does everything else;
	// a change elsewhere still goes through.
	e.write("two.yaml", "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: two\n  namespace: [default\n")
	e.write("three.yaml", harness.IngressYAML("default", "three", "three.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.eventually("three.example.com", "/", "a new Ingress while another file is broken", servedBy("a-1"))
	for _, host := range []string{"one.example.com", "two.example.com"} {
		if r, err := e.sy.Get(host, "/"); err != nil || r.Status != 200 {
			t.Fatalf("%s while two.yaml is broken: %v %d", host, err, r.Status)
		}
	}
	if !strings.Contains(e.sy.Output.String(), "two.yaml") {
		t.Errorf("the log does not name the broken file:\n%s", e.sy.Output.String())
	}

	// Fixed with a change: the new content is served.
	e.write("two.yaml", harness.IngressYAML("default", "two", "two.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	e.eventually("two.example.com", "/", "the fixed file", servedBy("a-1"))
}

func TestDeletedIngressStopsServing(t *testing.T) {
	e := newEnv(t, map[string]string{"gone.yaml": harness.IngressYAML("default", "gone", "gone.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})})
	e.eventually("gone.example.com", "/", "served before deletion", servedBy("a-1"))
	if err := os.Remove(filepath.Join(e.dir, "gone.yaml")); err != nil {
		t.Fatal(err)
	}
	e.eventually("gone.example.com", "/", "404 after deletion", status(404))
}

func TestRejectedIngressLeavesOthersServed(t *testing.T) {
	evil := `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: evil, namespace: default}
spec:
  ingressClassName: switchyard
  rules:
  - host: evil.example.com
    http:
      paths:
      - {path: "/x;} server { listen 9999; } #", pathType: ImplementationSpecific, backend: {service: {name: echo-a, port: {name: http}}}}
`
	e := newEnv(t, map[string]string{
		"evil.yaml": evil,
		"good.yaml": harness.IngressYAML("default", "good", "good.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}),
	})
	e.eventually("good.example.com", "/", "the good Ingress", servedBy("b-1"))
	if r, _ := e.sy.Get("evil.example.com", "/"); r.Status != 404 {
		t.Fatalf("rejected Ingress: status %d, want 404 from the default server", r.Status)
	}
	conf, err := os.ReadFile(filepath.Join(e.sy.Prefix(), "conf", "nginx.conf"))
	if err != nil {
		t.Fatal(err)
	}
	servers, _ := filepath.Glob(filepath.Join(e.sy.Prefix(), "conf", "servers", "*.conf"))
	for _, f := range servers {
		data, _ := os.ReadFile(f)
		conf = append(conf, data...)
	}
	if strings.Contains(string(conf), "9999") || strings.Contains(string(conf), "evil") {
		t.Fatal("the rejected Ingress reached nginx.conf")
	}
	if out := e.sy.Output.String(); !strings.Contains(out, "default/evil") || !strings.Contains(out, "spec.rules[0].http.paths[0].path") {
		t.Errorf("the log does not name the rejected Ingress and field:\n%s", out)
	}
}

func TestTLSBySNIWithoutReload(t *testing.T) {
	e := newEnv(t, map[string]string{"plain.yaml": harness.IngressYAML("default", "plain", "plain.example.com",
		harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"})})
	e.eventually("plain.example.com", "/", "plain served", servedBy("a-1"))

	cert, key := harness.SelfSigned(t, "secure.example.com")
	e.write("secure.yaml", harness.TLSIngressYAML("default", "secure", "secure.example.com", "echo-b", cert, key))
	harness.WaitFor(t, changeTimeout, "the Secret's certificate for secure.example.com", func() error {
		return harness.ExpectCertificate(e.sy.HTTPSAddr, "secure.example.com", "secure.example.com")
	})
	var r harness.Response
	harness.WaitFor(t, changeTimeout, "the TLS host to be served", func() error {
		var err error
		if r, err = e.sy.GetTLS("secure.example.com", "/"); err == nil && !servedBy("b-1")(r) {
			err = fmt.Errorf("status %d", r.Status)
		}
		return err
	})
	if r.Proto != "HTTP/2.0" {
		t.Errorf("HTTPS served over %s, want HTTP/2", r.Proto)
	}
	if r.Echo.Headers["X-Forwarded-Proto"][0] != "https" {
		t.Errorf("X-Forwarded-Proto %q, want https", r.Echo.Headers["X-Forwarded-Proto"])
	}
	// An unknown name gets the default certificate.
	if err := harness.ExpectCertificate(e.sy.HTTPSAddr, "unknown.example.com", "Switchyard Default Certificate"); err != nil {
		t.Fatal(err)
	}

	// A changed Secret reaches NGINX without a reload.
	workers := e.sy.WorkerPIDs(t)
	cert2, key2 := harness.SelfSigned(t, "secure.example.com")
	e.write("secure.yaml", harness.TLSIngressYAML("default", "secure", "secure.example.com", "echo-b", cert2, key2))
	harness.WaitFor(t, changeTimeout, "the renewed certificate", func() error {
		return harness.ExpectCertificatePEM(e.sy.HTTPSAddr, "secure.example.com", cert2)
	})
	if after := e.sy.WorkerPIDs(t); !slices.Equal(sorted(workers), sorted(after)) {
		t.Fatalf("NGINX reloaded on a certificate change: workers %v, then %v", workers, after)
	}
}

func TestStopsNginxOnInterrupt(t *testing.T) {
	e := newEnv(t, nil)
	master := e.sy.MasterPID(t)
	e.sy.Stop(20 * time.Second)
	if !e.sy.Exited() {
		t.Fatal("switchyard did not exit on SIGINT")
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", master)); err == nil {
		t.Fatalf("NGINX master %d still runs after switchyard stopped", master)
	}
}

func sorted(s []int) []int {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
