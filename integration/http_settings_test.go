package integration

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
)

// tryWith sends GET host+path through NGINX with extra request headers,
// for polling (getWith fails the test on a connection error).
func (e *env) tryWith(host, path string, headers map[string]string) (harness.Response, error) {
	return harness.DoWithHeaders(harness.NewClient(), http.MethodGet, "http://"+e.sy.HTTPAddr+path, host, headers)
}

// startWithConfigMap writes files and the controller ConfigMap with data
// next to the echo backends (newBackends), and starts Switchyard reading
// that ConfigMap.
func startWithConfigMap(t *testing.T, files, data map[string]string) *env {
	t.Helper()
	e := newBackends(t)
	for name, content := range files {
		e.write(name, content)
	}
	e.write("config.yaml", configMapYAML(data))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	return e
}

// TestGzipOnAndOff: with use-gzip the echo's JSON comes back gzip-encoded
// (and decodes to the echo's answer), except to a client gzip-disable's
// regex matches; with use-gzip off it comes back plain.
func TestGzipOnAndOff(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("zip", nil))
	e.write("config.yaml", configMapYAML(map[string]string{"use-gzip": "true", "gzip-min-length": "1", "gzip-level": "6",
		"gzip-disable": "^old-agent/[0-9]"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	gzipHeaders := map[string]string{"Accept-Encoding": "gzip"}

	var body []byte
	harness.WaitFor(t, changeTimeout, "a gzip-encoded answer", func() error {
		r, err := e.tryWith("zip.example.com", "/", gzipHeaders)
		if err != nil {
			return err
		}
		if r.Status != 200 || r.Header.Get("Content-Encoding") != "gzip" {
			return fmt.Errorf("got %d, Content-Encoding %q", r.Status, r.Header.Get("Content-Encoding"))
		}
		body = r.Body
		return nil
	})
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	var echoed harness.EchoReply
	if err := json.Unmarshal(plain, &echoed); err != nil || echoed.Pod != "a-1" {
		t.Fatalf("decoded body %q: %v", truncate(plain), err)
	}
	// gzip_disable matches without regard to case.
	oldAgent := map[string]string{"Accept-Encoding": "gzip", "User-Agent": "OLD-Agent/7 (x)"}
	if r, err := e.tryWith("zip.example.com", "/", oldAgent); err != nil || r.Status != 200 || r.Header.Get("Content-Encoding") != "" || r.Echo == nil {
		t.Fatalf("gzip-disable's client got %d, Content-Encoding %q, %v", r.Status, r.Header.Get("Content-Encoding"), err)
	}

	e.write("config.yaml", configMapYAML(map[string]string{"use-gzip": "false"}))
	harness.WaitFor(t, changeTimeout, "a plain answer once use-gzip is off", func() error {
		r, err := e.tryWith("zip.example.com", "/", gzipHeaders)
		if err != nil {
			return err
		}
		if r.Status != 200 || r.Header.Get("Content-Encoding") != "" || r.Echo == nil {
			return fmt.Errorf("got %d, Content-Encoding %q, body %s", r.Status, r.Header.Get("Content-Encoding"), truncate(r.Body))
		}
		return nil
	})
}

// TestUnsupportedAnnotationsServedWithWarnings: through real NGINX, an
// ingress-nginx annotation Switchyard ignores and a misspelt one are each
// reported (AnnotationNotSupported, UnknownAnnotation), and the Ingress is
// served all the same.
func TestUnsupportedAnnotationsServedWithWarnings(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("loud", map[string]string{
		ann + "http2-push-preload": "true",
		ann + "proxy-bdy-size":     "8m",
	}))
	e.sy = harness.StartSwitchyard(t, e.dir)
	e.eventually("loud.example.com", "/", "the Ingress served", servedBy("a-1"))
	harness.WaitFor(t, changeTimeout, "both warnings logged", func() error {
		got := strings.Join(problemsLogged(t, e.sy.Output.String())["default/loud"], "\n")
		for _, want := range []string{
			"metadata.annotations[" + ann + "http2-push-preload]: AnnotationNotSupported: ",
			"metadata.annotations[" + ann + "proxy-bdy-size]: UnknownAnnotation: ",
			"did you mean " + ann + "proxy-body-size?",
		} {
			if !strings.Contains(got, want) {
				return fmt.Errorf("problems lack %q:\n%s", want, got)
			}
		}
		return nil
	})
}

// defaultConfigMapYAML is a ConfigMap in namespace default (of headers,
// of TCP or UDP services); keys are quoted, so "9000" stays a string.
func defaultConfigMapYAML(name string, headers map[string]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s, namespace: default}\ndata:\n", name)
	for k, v := range headers {
		fmt.Fprintf(&b, "  %q: %q\n", k, v)
	}
	return b.String()
}

// TestAddAndProxySetHeaders: the controller ConfigMap's add-headers puts
// its ConfigMap's headers on every response, proxy-set-headers sends its
// ConfigMap's headers to the backend; a change of the headers' ConfigMap is applied without touching
// the controller ConfigMap, and a header value with a line break is
// refused (the others of its ConfigMap too) while traffic goes on.
func TestAddAndProxySetHeaders(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("hdr", nil))
	e.write("add.yaml", defaultConfigMapYAML("add", map[string]string{"X-Frame-Options": "DENY", "X-Served-By": "switchyard; v1"}))
	e.write("proxy.yaml", defaultConfigMapYAML("proxy", map[string]string{"X-Using-Switchyard": "yes"}))
	e.write("config.yaml", configMapYAML(map[string]string{
		"add-headers": "default/add", "proxy-set-headers": "default/proxy"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	r := e.eventually("hdr.example.com", "/", "the added headers", func(r harness.Response) bool {
		return r.Status == 200 && r.Header.Get("X-Frame-Options") == "DENY" && r.Echo != nil
	})
	if got := r.Header.Get("X-Served-By"); got != "switchyard; v1" {
		t.Errorf("X-Served-By %q", got)
	}
	if got := r.Echo.Headers["X-Using-Switchyard"]; len(got) != 1 || got[0] != "yes" {
		t.Errorf("the backend got X-Using-Switchyard %v; headers %v", got, r.Echo.Headers)
	}

	e.write("add.yaml", defaultConfigMapYAML("add", map[string]string{"X-Frame-Options": "SAMEORIGIN"}))
	e.eventually("hdr.example.com", "/", "the changed header", func(r harness.Response) bool {
		return r.Status == 200 && r.Header.Get("X-Frame-Options") == "SAMEORIGIN" && r.Header.Get("X-Served-By") == ""
	})

	e.write("add.yaml", defaultConfigMapYAML("add", map[string]string{"X-Frame-Options": "DENY", "X-Evil": "a\r\nSet-Cookie: x=1"}))
	harness.WaitFor(t, changeTimeout, "the bad header reported", func() error {
		if !strings.Contains(e.sy.Output.String(), "add-headers: ConfigMap default/add: header X-Evil") {
			return fmt.Errorf("no problem logged yet")
		}
		return nil
	})
	e.eventually("hdr.example.com", "/", "served without the refused ConfigMap's headers", func(r harness.Response) bool {
		return r.Status == 200 && r.Header.Get("X-Frame-Options") == "" && r.Header.Get("Set-Cookie") == "" && r.Echo != nil
	})
}

// TestCustomHeadersOnResponse: the custom-headers annotation adds its
// ConfigMap's headers to the Ingress's responses (alongside add-headers
// and HSTS), a change of the ConfigMap is applied, and an Ingress naming a
// ConfigMap with a bad header is rejected while its neighbour is served.
func TestCustomHeadersOnResponse(t *testing.T) {
	e := newBackends(t)
	e.write("custom.yaml", defaultConfigMapYAML("custom", map[string]string{"X-Custom": "one", "Cache-Control": "no-store"}))
	e.write("bad.yaml", defaultConfigMapYAML("bad", map[string]string{"X-Evil": "x\r\nSet-Cookie: a=b"}))
	e.write("add.yaml", defaultConfigMapYAML("add", map[string]string{"X-Global": "g"}))
	e.write("config.yaml", configMapYAML(map[string]string{"add-headers": "default/add"}))
	e.write("ing.yaml", annotatedIngressYAML("custom", map[string]string{ann + "custom-headers": "custom"}))
	e.write("ing-bad.yaml", annotatedIngressYAML("badheaders", map[string]string{ann + "custom-headers": "default/bad"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	r := e.eventually("custom.example.com", "/", "the custom headers", func(r harness.Response) bool {
		return r.Status == 200 && r.Header.Get("X-Custom") == "one" && r.Echo != nil
	})
	if r.Header.Get("Cache-Control") != "no-store" || r.Header.Get("X-Global") != "g" {
		t.Errorf("headers %v: want Cache-Control and the add-headers one too", r.Header)
	}
	e.write("custom.yaml", defaultConfigMapYAML("custom", map[string]string{"X-Custom": "two"}))
	e.eventually("custom.example.com", "/", "the changed custom header", func(r harness.Response) bool {
		return r.Status == 200 && r.Header.Get("X-Custom") == "two" && r.Header.Get("Cache-Control") == ""
	})
	e.eventually("badheaders.example.com", "/", "the Ingress with a bad header not served", status(404))
	harness.WaitFor(t, changeTimeout, "the rejection logged", func() error {
		got := strings.Join(problemsLogged(t, e.sy.Output.String())["default/badheaders"], "\n")
		if !strings.Contains(got, "custom-headers]: InvalidAnnotation: ") || strings.Contains(got, "Set-Cookie") {
			return fmt.Errorf("problems: %s", got)
		}
		return nil
	})
}

// TestServerAliasServed: server-alias makes the Ingress's host answer to
// other names; an alias that is another Ingress's host is left out with a
// warning, and that host stays the other Ingress's.
func TestServerAliasServed(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("aliased", map[string]string{
		ann + "server-alias": "other-name.example.com, *.wild.example.org, taken.example.com"}))
	e.write("taken.yaml", harness.IngressYAML("default", "taken", "taken.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-b"}))
	e.sy = harness.StartSwitchyard(t, e.dir)

	e.eventually("aliased.example.com", "/", "the Ingress's own host", servedBy("a-1"))
	e.eventually("other-name.example.com", "/", "the alias", servedBy("a-1"))
	e.eventually("x.wild.example.org", "/", "the wildcard alias", servedBy("a-1"))
	e.eventually("taken.example.com", "/", "the other Ingress's host", servedBy("b-1"))
	harness.WaitFor(t, changeTimeout, "the left-out alias reported", func() error {
		got := strings.Join(problemsLogged(t, e.sy.Output.String())["default/aliased"], "\n")
		if !strings.Contains(got, "server alias taken.example.com is left out") {
			return fmt.Errorf("problems: %s", got)
		}
		return nil
	})
}

// TestBrotli: enable-brotli loads Debian's brotli filter module and
// compresses for clients that accept br.
func TestBrotli(t *testing.T) {
	const module = "/usr/lib/nginx/modules/ngx_http_brotli_filter_module.so"
	if _, err := os.Stat(module); err != nil {
		t.Skipf("%s is not installed (make deps installs libnginx-mod-http-brotli-filter): %v", module, err)
	}
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("br", nil))
	e.write("config.yaml", configMapYAML(map[string]string{"enable-brotli": "true", "brotli-min-length": "1", "brotli-types": "application/json"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	harness.WaitFor(t, changeTimeout, "a brotli-encoded answer", func() error {
		r, err := e.tryWith("br.example.com", "/", map[string]string{"Accept-Encoding": "br"})
		if err != nil {
			return err
		}
		if r.Status != 200 || r.Header.Get("Content-Encoding") != "br" {
			return fmt.Errorf("got %d, Content-Encoding %q", r.Status, r.Header.Get("Content-Encoding"))
		}
		return nil
	})
}
