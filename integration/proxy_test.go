package integration

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/echo"
)

// proxyIngress is an Ingress for host with / on service, and annotations.
func proxyIngress(name, host, service string, annotations map[string]string) string {
	ing := harness.IngressYAML("default", name, host, harness.Path{Path: "/", Type: "Prefix", Service: service})
	if len(annotations) == 0 {
		return ing
	}
	return annotated(ing, annotations)
}

// send sends one request through NGINX's HTTP listener with headers and
// a body; a fresh client, so no connection is shared between requests.
func (e *env) send(method, host, path string, headers map[string]string, body []byte) (harness.Response, error) {
	return harness.DoWithHeaders(harness.NewClient(), method, "http://"+e.sy.HTTPAddr+path, host, headers, body)
}

// blackhole is a loopback port that takes no connection: a listener with
// a backlog of 0 whose queue is filled and never accepted, so Linux drops
// every further SYN and a connect only ends by its timeout.
func blackhole(t *testing.T) int {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	port := sa.(*syscall.SockaddrInet4).Port
	// Fill the queue until a connection is no longer set up.
	for i := 0; i < 8; i++ {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 500*time.Millisecond)
		if err != nil {
			return port
		}
		t.Cleanup(func() { c.Close() })
	}
	t.Fatalf("port %d kept accepting connections", port)
	return 0
}

// sendChunked posts body without a Content-Length: Go sends it chunked.
func (e *env) sendChunked(host, path string, body []byte) (harness.Response, error) {
	// A reader of unknown length: not a *bytes.Reader, whose length
	// NewRequest would read.
	return harness.DoWithReader(harness.NewClient(), http.MethodPost, "http://"+e.sy.HTTPAddr+path, host, io.MultiReader(bytes.NewReader(body)))
}

// TestProxySettingsThroughNginx: the proxy plugin's annotations and the
// ConfigMap's proxy keys, through the real binary, NGINX and echo
// backends: body size, read timeout, retries over a dead endpoint,
// upstream-vhost and connection-proxy-header, service-upstream, and the
// annotation winning over the ConfigMap.
func TestProxySettingsThroughNginx(t *testing.T) {
	e := newBackends(t)
	// "dead" has two endpoints: a port nothing listens on, and echo-b.
	dead := harness.FreePort(t)
	e.write("dead.yaml", harness.ServiceYAML("default", "dead", dead, e.portB))
	e.write("upload.yaml", proxyIngress("upload", "upload.example.com", "echo-a", map[string]string{"proxy-body-size": "30m"}))
	e.write("small.yaml", proxyIngress("small", "small.example.com", "echo-a", nil))
	e.write("slow.yaml", proxyIngress("slow", "slow.example.com", "echo-b", map[string]string{"proxy-read-timeout": "1"}))
	e.write("patient.yaml", proxyIngress("patient", "patient.example.com", "echo-b", map[string]string{"proxy-read-timeout": "20"}))
	e.write("retry.yaml", proxyIngress("retry", "retry.example.com", "dead", nil))
	e.write("vhost.yaml", proxyIngress("vhost", "vhost.example.com", "echo-a", map[string]string{"upstream-vhost": "backend.internal:8080", "connection-proxy-header": "keep-alive"}))
	// The ConfigMap raises the body size everywhere; the annotation of
	// "strict" lowers it again for its host.
	e.write("strict.yaml", proxyIngress("strict", "strict.example.com", "echo-a", map[string]string{"proxy-body-size": "1k"}))
	// "vip" has a cluster IP on loopback with echo-a's port, and only the
	// dead endpoint: service-upstream proxies to the cluster IP.
	e.write("vip.yaml", fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: vip, namespace: default}
spec:
  clusterIP: 127.0.0.1
  ports: [{name: http, port: %d}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: vip-1
  namespace: default
  labels: {kubernetes.io/service-name: vip}
addressType: IPv4
ports: [{name: http, port: %d}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
`, e.portA, dead))
	e.write("cluster-ip.yaml", proxyIngress("cluster-ip", "vip.example.com", "vip", map[string]string{"service-upstream": "true"}))
	e.write("endpoints.yaml", proxyIngress("endpoints", "endpoints.example.com", "vip", nil))
	// "hole" is an endpoint whose accept queue is full: a connection to it
	// is never set up, so only the connect timeout ends the attempt. The
	// ConfigMap's connect timeout is far longer than the client waits.
	e.write("hole.yaml", harness.ServiceYAML("default", "hole", blackhole(t)))
	e.write("connect.yaml", proxyIngress("connect", "connect.example.com", "hole", map[string]string{"proxy-connect-timeout": "1"}))
	e.write("config.yaml", configMapYAML(map[string]string{"proxy-read-timeout": "2", "proxy-connect-timeout": "120"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	for _, host := range []string{"upload.example.com", "small.example.com", "slow.example.com", "vhost.example.com", "strict.example.com", "retry.example.com", "patient.example.com"} {
		e.eventually(host, "/", host+" served", func(r harness.Response) bool { return r.Status == 200 && r.Echo != nil })
	}
	// The timeouts, upstream-vhost and connection-proxy-header are applied
	// by router.lua; a body size other than the shared one needs its block.
	// So is a body size below the shared one; a larger one needs its block.
	expectRouting(t, e.sy, map[string]bool{"connect.example.com": true, "slow.example.com": true, "patient.example.com": true,
		"vhost.example.com": true, "small.example.com": true, "strict.example.com": true, "upload.example.com": false})

	t.Run("proxy-body-size", func(t *testing.T) {
		body := bytes.Repeat([]byte("x"), 20<<20)
		r, err := e.send(http.MethodPost, "upload.example.com", "/", nil, body)
		if err != nil || r.Status != 200 || r.Echo == nil || r.Echo.BodyBytes != int64(len(body)) {
			t.Fatalf("20 MB upload with proxy-body-size 30m: %v, status %d, echo %+v", err, r.Status, r.Echo)
		}
		if r, err := e.send(http.MethodPost, "small.example.com", "/", nil, body); err != nil || r.Status != 413 {
			t.Fatalf("20 MB upload without proxy-body-size: %v, status %d, want 413", err, r.Status)
		}
		if r, err := e.send(http.MethodPost, "strict.example.com", "/", nil, bytes.Repeat([]byte("x"), 4096)); err != nil || r.Status != 413 {
			t.Fatalf("4 KB upload with proxy-body-size 1k: %v, status %d, want 413", err, r.Status)
		}
		// A chunked body (no Content-Length) is held to the same limit,
		// small and large (the latter through a temporary file).
		for _, tc := range []struct {
			size   int
			status int
		}{{512, 200}, {1024, 200}, {1025, 413}, {4096, 413}, {2 << 20, 413}} {
			r, err := e.sendChunked("strict.example.com", "/", bytes.Repeat([]byte("x"), tc.size))
			if err != nil || r.Status != tc.status {
				t.Fatalf("%d B chunked upload with proxy-body-size 1k: %v, status %d, want %d", tc.size, err, r.Status, tc.status)
			}
			if tc.status == 200 && (r.Echo == nil || r.Echo.BodyBytes != int64(tc.size)) {
				t.Fatalf("%d B chunked upload: echo %+v", tc.size, r.Echo)
			}
		}
		// Over HTTP/2 a body of unknown length has no Content-Length either.
		for _, tc := range []struct {
			size   int
			status int
		}{{512, 200}, {1025, 413}, {100 << 10, 413}} {
			client := harness.NewClient()
			transport := client.Transport.(*http.Transport)
			transport.TLSClientConfig.ServerName = "strict.example.com"
			transport.ForceAttemptHTTP2 = true
			r, err := harness.DoWithReader(client, http.MethodPost, "https://"+e.sy.HTTPSAddr+"/", "strict.example.com",
				io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("x"), tc.size))))
			if err != nil || r.Status != tc.status || r.Proto != "HTTP/2.0" {
				t.Fatalf("%d B HTTP/2 upload with proxy-body-size 1k: %v, status %d %s, want %d over HTTP/2", tc.size, err, r.Status, r.Proto, tc.status)
			}
		}
		if r, err := e.send(http.MethodPost, "strict.example.com", "/", nil, bytes.Repeat([]byte("x"), 1024)); err != nil || r.Status != 200 {
			t.Fatalf("1 KB upload with proxy-body-size 1k: %v, status %d, want 200", err, r.Status)
		}
	})

	t.Run("proxy-read-timeout", func(t *testing.T) {
		slow := map[string]string{echo.DelayHeader: "5s"}
		if r, err := e.send(http.MethodGet, "slow.example.com", "/", slow, nil); err != nil || r.Status != 504 {
			t.Fatalf("5 s backend with proxy-read-timeout 1: %v, status %d, want 504", err, r.Status)
		}
		// The ConfigMap's 2 s holds where no annotation says otherwise,
		// and an annotation raises it again.
		if r, err := e.send(http.MethodGet, "small.example.com", "/", slow, nil); err != nil || r.Status != 504 {
			t.Fatalf("5 s backend with the ConfigMap's 2 s: %v, status %d, want 504", err, r.Status)
		}
		if r, err := e.send(http.MethodGet, "patient.example.com", "/", slow, nil); err != nil || r.Status != 200 {
			t.Fatalf("5 s backend with proxy-read-timeout 20 over the ConfigMap's 2: %v, status %d, want 200", err, r.Status)
		}
	})

	t.Run("proxy-connect-timeout", func(t *testing.T) {
		// 1 s over the ConfigMap's 120 s: a 504 long before the client
		// gives up (the margin is for a loaded machine, not a measure).
		client := harness.NewClient()
		client.Timeout = 60 * time.Second
		r, err := harness.DoWithHeaders(client, http.MethodGet, "http://"+e.sy.HTTPAddr+"/", "connect.example.com", nil)
		if err != nil || r.Status != 504 {
			t.Fatalf("an endpoint that never accepts, with proxy-connect-timeout 1: %v, status %d, want 504", err, r.Status)
		}
	})

	t.Run("proxy-next-upstream", func(t *testing.T) {
		// Default "error timeout": a refused connection is retried on
		// the other endpoint, so every request is answered by echo-b.
		for i := range 12 {
			if r, err := e.send(http.MethodGet, "retry.example.com", "/", nil, nil); err != nil || r.Status != 200 || r.Echo == nil || r.Echo.Pod != "b-1" {
				t.Fatalf("request %d with a dead endpoint: %v, status %d", i, err, r.Status)
			}
		}
		// With retries off, the dead endpoint's turn is a 502.
		e.write("retry.yaml", proxyIngress("retry", "retry.example.com", "dead", map[string]string{"proxy-next-upstream": "off"}))
		e.eventually("retry.example.com", "/", "a 502 from the dead endpoint without retries", status(502))
	})

	t.Run("upstream-vhost", func(t *testing.T) {
		r := e.expect("vhost.example.com", "/", 200, "a-1")
		if r.Echo.Host != "backend.internal:8080" {
			t.Fatalf("backend saw Host %q, want backend.internal:8080", r.Echo.Host)
		}
		if got := r.Echo.Headers["X-Forwarded-Host"]; len(got) != 1 || got[0] != "vhost.example.com" {
			t.Fatalf("X-Forwarded-Host %q, want the client's host", got)
		}
		if got := r.Echo.Headers["Connection"]; len(got) != 1 || got[0] != "keep-alive" {
			t.Fatalf("Connection %q, want keep-alive (connection-proxy-header)", got)
		}
		// Other hosts keep the client's Host and the default Connection.
		if r := e.expect("small.example.com", "/", 200, "a-1"); r.Echo.Host != "small.example.com" || r.Echo.Headers["Connection"] != nil {
			t.Fatalf("backend saw Host %q, Connection %q on a host without the annotations", r.Echo.Host, r.Echo.Headers["Connection"])
		}
	})

	t.Run("service-upstream", func(t *testing.T) {
		e.eventually("vip.example.com", "/", "the cluster IP", servedBy("a-1"))
		// The same Service without the annotation uses its endpoint,
		// which is dead.
		e.eventually("endpoints.example.com", "/", "the dead endpoint", status(502))
	})

	t.Run("service-upstream from the ConfigMap", func(t *testing.T) {
		settings := map[string]string{"proxy-read-timeout": "2", "proxy-connect-timeout": "120"}
		settings["service-upstream"] = "true"
		e.write("config.yaml", configMapYAML(settings))
		e.eventually("endpoints.example.com", "/", "the cluster IP by the ConfigMap's default", servedBy("a-1"))
		// Services without a cluster IP keep their endpoints.
		e.expect("small.example.com", "/", 200, "a-1")
		// The annotation wins, false included.
		e.write("endpoints.yaml", proxyIngress("endpoints", "endpoints.example.com", "vip", map[string]string{"service-upstream": "false"}))
		e.eventually("endpoints.example.com", "/", "the endpoint again by the annotation", status(502))
		e.write("endpoints.yaml", proxyIngress("endpoints", "endpoints.example.com", "vip", nil))
		delete(settings, "service-upstream")
		e.write("config.yaml", configMapYAML(settings))
		e.eventually("vip.example.com", "/", "the annotated Ingress still on the cluster IP", servedBy("a-1"))
	})

	t.Run("bad value rejects only its Ingress", func(t *testing.T) {
		e.write("upload.yaml", proxyIngress("upload", "upload.example.com", "echo-a", map[string]string{"proxy-body-size": "100000000g"}))
		e.eventually("upload.example.com", "/", "the rejected Ingress gone", status(404))
		e.expect("small.example.com", "/", 200, "a-1")
		harness.WaitFor(t, changeTimeout, "the reason reported", func() error {
			problems := problemsLogged(t, e.sy.Output.String())["default/upload"]
			for _, p := range problems {
				if strings.Contains(p, "proxy-body-size") && strings.Contains(p, "over the limit of 1024g") {
					return nil
				}
			}
			return fmt.Errorf("problems of default/upload: %q", problems)
		})
	})
}

// TestProxyInjectionRejected: a hostile value in each proxy annotation
// that reaches nginx.conf (the Medium-risk ones and those written into a
// header) rejects its Ingress with a Problem naming the annotation;
// nothing of the value is rendered, and a neighbouring Ingress stays
// served.
func TestProxyInjectionRejected(t *testing.T) {
	cases := map[string]string{ // annotation → value; each carries "pwn<i>"
		"proxy-body-size":         `1m; location /pwn1 { return 200; }`,
		"proxy-next-upstream":     "error;\nlua_code_cache off; #pwn2",
		"proxy-cookie-domain":     `a.local "pwn3"; } #`,
		"proxy-cookie-path":       `/a /$pwn4`,
		"proxy-redirect-from":     `~^http://(pwn5)/`,
		"proxy-redirect-to":       `https://x/"; return 200 "pwn6`,
		"upstream-vhost":          `pwn7"; proxy_pass http://evil; #`,
		"connection-proxy-header": `close"; add_header X pwn8; #`,
		"proxy-buffer-size":       `4k pwn9`,
		"proxy-http-version":      `1.1; pwn10`,
	}
	e := newBackends(t)
	e.write("good.yaml", proxyIngress("good", "good.example.com", "echo-a", map[string]string{"proxy-body-size": "2m"}))
	names := map[string]string{}
	i := 0
	for key, value := range cases {
		i++
		name := fmt.Sprintf("hostile%d", i)
		names[name] = key
		annotations := map[string]string{key: value}
		if key == "proxy-redirect-to" {
			annotations["proxy-redirect-from"] = "http://a.local/"
		}
		e.write(name+".yaml", proxyIngress(name, name+".example.com", "echo-a", annotations))
	}
	e.sy = harness.StartSwitchyard(t, e.dir)
	e.eventually("good.example.com", "/", "the ordinary Ingress", servedBy("a-1"))
	harness.WaitFor(t, changeTimeout, "every hostile Ingress reported", func() error {
		problems := problemsLogged(t, e.sy.Output.String())
		for name, key := range names {
			found := false
			for _, p := range problems["default/"+name] {
				found = found || strings.Contains(p, key)
			}
			if !found {
				return fmt.Errorf("%s (%s): problems %q", name, key, problems["default/"+name])
			}
		}
		return nil
	})
	for name := range names {
		e.expect(name+".example.com", "/", 404, "")
	}
	rendered := false
	for path, text := range readTree(t, e.sy.ConfDir()) {
		rendered = rendered || strings.Contains(text, `"good.example.com"`)
		if strings.Contains(text, "pwn") {
			t.Errorf("%s holds a hostile value:\n%s", path, text)
		}
	}
	if !rendered {
		t.Fatal("no rendered server for good.example.com: the check above saw nothing")
	}
	e.expect("good.example.com", "/", 200, "a-1")
}
