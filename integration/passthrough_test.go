package integration

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/nginx"
	"switchyard.dev/switchyard/templates"
)

// passthroughGet sends GET https://host/ to addr from src (a loopback
// address), with host as the SNI name.
func passthroughGet(addr, src, host string) (harness.Response, error) {
	c := clientFrom(src)
	c.Transport.(*http.Transport).TLSClientConfig.ServerName = host
	return harness.Do(c, http.MethodGet, "https://"+addr+"/", host, nil)
}

// TestSSLPassthroughThroughNginx: with --enable-ssl-passthrough, a host
// with ssl-passthrough gets its TLS unterminated (the client sees the
// backend's own certificate and gets the backend's answer), while the
// other hosts on the same port are terminated by NGINX with their
// Ingress's certificate, and their backends and source ranges see the real
// client address. An endpoint change of the passthrough backend, or its
// last endpoint gone, reaches new connections without a reload. Without
// the flag the annotation is a warning and the host is terminated.
func TestSSLPassthroughThroughNginx(t *testing.T) {
	backendCert, backendKey := harness.SelfSigned(t, "pass.example.com")
	secureCert, secureKey := harness.SelfSigned(t, "secure.example.com")
	e := newBackends(t)
	e.write("backends.yaml", harness.ServiceYAML("default", "tls-backend", startTLSBackend(t, backendCert, backendKey, nil)))
	e.write("ingresses.yaml", strings.Join([]string{
		harness.AnnotatedIngressYAML("default", "pass", "pass.example.com", map[string]string{upstreamPrefix + "ssl-passthrough": "true"},
			harness.Path{Path: "/", Type: "Prefix", Service: "tls-backend"}),
		harness.TLSIngressYAML("default", "secure", "secure.example.com", "echo-a", secureCert, secureKey),
		harness.AnnotatedIngressYAML("default", "guarded", "guarded.example.com", map[string]string{upstreamPrefix + "allowlist-source-range": "127.0.0.2"},
			harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}),
	}, "---\n"))
	e.sy = harness.StartSwitchyard(t, e.dir, "--enable-ssl-passthrough")
	addr := e.sy.HTTPSAddr

	harness.WaitFor(t, changeTimeout, "the backend's own certificate for the passthrough host", func() error {
		return harness.ExpectCertificatePEM(addr, "pass.example.com", backendCert)
	})
	r, err := passthroughGet(addr, "127.0.0.1", "pass.example.com")
	if err != nil {
		t.Fatal(err)
	}
	var reply tlsBackendReply
	if r.Status != http.StatusOK || json.Unmarshal(r.Body, &reply) != nil || reply.SNI != "pass.example.com" || reply.Forwarded != "" {
		t.Fatalf("passthrough host: status %d, body %s", r.Status, r.Body)
	}

	harness.WaitFor(t, changeTimeout, "the Ingress's certificate for the terminated host", func() error {
		return harness.ExpectCertificatePEM(addr, "secure.example.com", secureCert)
	})
	r, err = passthroughGet(addr, "127.0.0.2", "secure.example.com")
	if err != nil {
		t.Fatal(err)
	}
	if r.Echo == nil {
		t.Fatalf("terminated host: status %d, body %s", r.Status, r.Body)
	}
	_, port, _ := strings.Cut(addr, ":")
	h := r.Echo.Headers
	if got := fmt.Sprint(h["X-Real-Ip"], h["X-Forwarded-For"], h["X-Forwarded-Port"], h["X-Forwarded-Proto"]); got != "[127.0.0.2] [127.0.0.2] ["+port+"] [https]" {
		t.Fatalf("terminated host: the backend saw X-Real-IP, X-Forwarded-For, -Port, -Proto %s, want the client 127.0.0.2 on port %s over https", got, port)
	}

	if r, err := e.sy.GetTLS("secure.example.com", "/"); err != nil || r.Echo == nil || r.Proto != "HTTP/2.0" {
		t.Fatalf("terminated host over HTTP/2: %v, proto %q", err, r.Proto)
	}

	for src, want := range map[string]int{"127.0.0.2": http.StatusOK, "127.0.0.1": http.StatusForbidden} {
		r, err := passthroughGet(addr, src, "guarded.example.com")
		if err != nil || r.Status != want {
			t.Fatalf("allowlist 127.0.0.2 over TLS, client %s: status %d (%v), want %d", src, r.Status, err, want)
		}
	}

	// Plain HTTP of the passthrough host is served by its HTTP server as
	// before: NGINX proxies to the backend, which speaks only TLS.
	if r, err := e.sy.Get("pass.example.com", "/"); err != nil || r.Status != http.StatusBadRequest {
		t.Fatalf("plain HTTP of the passthrough host: status %d (%v), want the TLS backend's 400", r.Status, err)
	}

	// An endpoint change of the passthrough backend reaches new
	// connections without a reload (the same workers), in any letter case
	// of the name; a connection opened before the change stays with the
	// old backend and keeps working.
	workers := e.sy.WorkerPIDs(t)
	open := dialPassthrough(t, addr, "pass.example.com")
	if reply := open.get(t); reply.SNI != "pass.example.com" {
		t.Fatalf("open passthrough connection: %+v", reply)
	}
	movedCert, movedKey := harness.SelfSigned(t, "pass.example.com")
	e.write("backends.yaml", harness.ServiceYAML("default", "tls-backend", startTLSBackend(t, movedCert, movedKey, nil)))
	harness.WaitFor(t, changeTimeout, "the moved backend's certificate", func() error {
		return harness.ExpectCertificatePEM(addr, "pass.example.com", movedCert)
	})
	if err := harness.ExpectCertificatePEM(addr, "PASS.Example.COM", movedCert); err != nil {
		t.Fatalf("upper-case SNI: %v", err)
	}
	if reply := open.get(t); reply.SNI != "pass.example.com" {
		t.Fatalf("the connection opened before the change: %+v", reply)
	}
	if r, err := passthroughGet(addr, "127.0.0.2", "secure.example.com"); err != nil || r.Echo == nil {
		t.Fatalf("terminated host after the passthrough change: %v %+v", err, r)
	}

	// No ready endpoint: the host's connections are closed, still without
	// a reload; its endpoint back, it is served again.
	e.write("backends.yaml", harness.ServiceYAML("default", "tls-backend"))
	harness.WaitFor(t, changeTimeout, "the passthrough host's connections closed", func() error {
		if _, _, err := harness.ServedCertificate(addr, "pass.example.com"); err == nil {
			return errors.New("a TLS handshake completed")
		}
		return nil
	})
	e.write("backends.yaml", harness.ServiceYAML("default", "tls-backend", startTLSBackend(t, movedCert, movedKey, nil)))
	harness.WaitFor(t, changeTimeout, "the passthrough host served again", func() error {
		return harness.ExpectCertificatePEM(addr, "pass.example.com", movedCert)
	})
	if now := e.sy.WorkerPIDs(t); !slices.Equal(sortedPIDs(now), sortedPIDs(workers)) {
		t.Fatalf("NGINX reloaded for passthrough endpoint changes: workers %v, then %v", workers, now)
	}

	// A passthrough host added or removed changes the stream file's map (a
	// reload): its endpoints file comes before and goes after it.
	passDir := filepath.Join(e.sy.Prefix(), nginx.InternalDir, "passthrough")
	e.write("pass2.yaml", harness.AnnotatedIngressYAML("default", "pass2", "pass2.example.com",
		map[string]string{upstreamPrefix + "ssl-passthrough": "true"}, harness.Path{Path: "/", Type: "Prefix", Service: "tls-backend"}))
	harness.WaitFor(t, changeTimeout, "the added passthrough host", func() error {
		return harness.ExpectCertificatePEM(addr, "pass2.example.com", movedCert)
	})
	if err := os.Remove(filepath.Join(e.dir, "pass2.yaml")); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, changeTimeout, "the removed passthrough host terminated and its file gone", func() error {
		if err := harness.ExpectCertificatePEM(addr, "pass2.example.com", movedCert); err == nil {
			return errors.New("still passed through")
		}
		if _, err := os.Stat(filepath.Join(passDir, "pass2.example.com")); !os.IsNotExist(err) {
			return fmt.Errorf("its endpoints file: %v", err)
		}
		return nil
	})
	if names, err := os.ReadDir(passDir); err != nil || len(names) != 1 || names[0].Name() != "pass.example.com" {
		t.Fatalf("passthrough directory: %v (%v)", names, err)
	}

	// A controller killed outright leaves NGINX's unix sockets behind; the
	// next one on the same state dir starts anyway.
	_ = e.sy.Cmd.Process.Kill()
	harness.WaitFor(t, changeTimeout, "the killed controller to exit", func() error {
		if !e.sy.Exited() {
			return errors.New("still running")
		}
		return nil
	})
	e.sy = e.sy.Restart(t, "--enable-ssl-passthrough")
	harness.WaitFor(t, changeTimeout, "passthrough after a restart", func() error {
		return harness.ExpectCertificatePEM(addr, "pass.example.com", movedCert)
	})

	// Without the flag: a warning, and NGINX terminates the host's TLS.
	e.sy.Stop(20 * time.Second)
	off := harness.StartSwitchyard(t, e.dir)
	harness.WaitFor(t, changeTimeout, "the warning without --enable-ssl-passthrough", func() error {
		if !strings.Contains(off.Output.String(), "has no effect without --enable-ssl-passthrough") {
			return errors.New("not logged yet")
		}
		return nil
	})
	if _, cn, err := harness.ServedCertificate(off.HTTPSAddr, "pass.example.com"); err != nil || cn == "pass.example.com" {
		t.Fatalf("without --enable-ssl-passthrough NGINX served CN %q (%v), want its default certificate", cn, err)
	}
	if r, err := off.GetTLS("secure.example.com", "/"); err != nil || r.Echo == nil {
		t.Fatalf("terminated host without the flag: %v %+v", err, r)
	}
}

// TestSSLPassthroughBehindProxyProtocol: with use-proxy-protocol the
// stream module reads the load balancer's PROXY header, takes the client
// address from a trusted peer and hands it on: a terminated host's backend
// sees the client, and a passthrough host still gets its backend's TLS.
func TestSSLPassthroughBehindProxyProtocol(t *testing.T) {
	backendCert, backendKey := harness.SelfSigned(t, "pass.example.com")
	e := newBackends(t)
	e.write("backends.yaml", harness.ServiceYAML("default", "tls-backend", startTLSBackend(t, backendCert, backendKey, nil)))
	e.write("ingresses.yaml", strings.Join([]string{
		harness.AnnotatedIngressYAML("default", "pass", "pass.example.com", map[string]string{upstreamPrefix + "ssl-passthrough": "true"},
			harness.Path{Path: "/", Type: "Prefix", Service: "tls-backend"}),
		annotatedIngressYAML("pp", nil),
	}, "---\n"))
	e.write("config.yaml", configMapYAML(map[string]string{"proxy-real-ip-cidr": "127.0.0.1/32"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName, "--enable-ssl-passthrough")
	e.write("config.yaml", configMapYAML(map[string]string{"use-proxy-protocol": "true", "proxy-real-ip-cidr": "127.0.0.1/32"}))
	client := netip.MustParseAddr("203.0.113.7")

	realIPOverTLS := func(want string) func() error {
		return func() error {
			conn, err := tlsBehindProxyProtocol(e.sy.HTTPSAddr, proxyV1(client), "pp.example.com")
			if err != nil {
				return err
			}
			defer conn.Close()
			reply, err := getOn(conn, "pp.example.com")
			if err == nil && strings.Join(reply.Headers["X-Real-Ip"], ",") != want {
				err = fmt.Errorf("backend saw X-Real-IP %v, want %s", reply.Headers["X-Real-Ip"], want)
			}
			return err
		}
	}
	harness.WaitFor(t, changeTimeout, "pp.example.com over TLS behind a PROXY header", realIPOverTLS(client.String()))
	harness.WaitFor(t, changeTimeout, "the passthrough host behind a PROXY header", func() error {
		conn, err := tlsBehindProxyProtocol(e.sy.HTTPSAddr, proxyV2(client), "pass.example.com")
		if err != nil {
			return err
		}
		defer conn.Close()
		block, _ := pem.Decode(backendCert)
		if !bytes.Equal(conn.ConnectionState().PeerCertificates[0].Raw, block.Bytes) {
			return errors.New("not the backend's certificate")
		}
		return nil
	})

	// The peer (127.0.0.1) is no longer trusted: the stream module reads
	// its header but hands on the peer's own address.
	e.write("config.yaml", configMapYAML(map[string]string{"use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/8"}))
	harness.WaitFor(t, changeTimeout, "the PROXY address ignored from an untrusted peer over TLS", realIPOverTLS("127.0.0.1"))
}

// tlsBehindProxyProtocol opens a TLS connection with SNI host after a
// PROXY header, as a load balancer in front would pass a client's on.
func tlsBehindProxyProtocol(addr string, header []byte, host string) (*tls.Conn, error) {
	raw, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	_ = raw.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Write(header); err != nil {
		raw.Close()
		return nil, err
	}
	conn := tls.Client(raw, &tls.Config{ServerName: host, InsecureSkipVerify: true}) // the test checks certificates itself
	if err := conn.Handshake(); err != nil {
		raw.Close()
		return nil, err
	}
	return conn, nil
}

// getOn sends GET / for host on conn and reads the echo answer.
func getOn(conn net.Conn, host string) (*harness.EchoReply, error) {
	if _, err := fmt.Fprintf(conn, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var reply harness.EchoReply
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil || resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d, not an echo answer: %v", resp.StatusCode, err)
	}
	return &reply, nil
}

// passthroughConn is a kept-alive HTTPS connection through the passthrough
// route.
type passthroughConn struct {
	conn   *tls.Conn
	reader *bufio.Reader
}

func dialPassthrough(t *testing.T, addr, host string) *passthroughConn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{ServerName: host, InsecureSkipVerify: true}) // the test checks what answers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &passthroughConn{conn: conn, reader: bufio.NewReader(conn)}
}

// get sends GET / on the connection, keeping it open, and reads the TLS
// backend's answer.
func (c *passthroughConn) get(t *testing.T) tlsBackendReply {
	t.Helper()
	_ = c.conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c.conn, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", c.conn.ConnectionState().ServerName); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(c.reader, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reply tlsBackendReply
	if err := json.NewDecoder(resp.Body).Decode(&reply); err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return reply
}

func sortedPIDs(pids []int) []int {
	pids = slices.Clone(pids)
	slices.Sort(pids)
	return pids
}

// TestPassthroughScriptReadsOnlyHostFiles runs templates/passthrough.js in
// a hand-written NGINX stream server that sends every SNI name to it: a
// name is looked up in any letter case, a host with several endpoints gets
// each of them (picked at random), and a name that is not a host name
// ("../", a leading dot, odd bytes), a host without a file, and a file
// without an endpoint all get the connection closed; nothing outside the
// directory is ever read.
func TestPassthroughScriptReadsOnlyHostFiles(t *testing.T) {
	certA, keyA := harness.SelfSigned(t, "a.example.com")
	certB, keyB := harness.SelfSigned(t, "b.example.com")
	a, b := startTLSBackend(t, certA, keyA, nil), startTLSBackend(t, certB, keyB, nil)
	port := harness.FreePort(t)
	endpointA := fmt.Sprintf("127.0.0.1:%d\n", a)
	harness.RunNginx(t, fmt.Sprintf(`load_module %[1]s/ngx_stream_module.so;
load_module %[1]s/ngx_stream_js_module.so;
worker_processes 1;
events {}
stream {
    js_import switchyard_passthrough from {{dir}}/passthrough.js;
    js_var $switchyard_passthrough_dir "{{dir}}/pass";
    js_set $switchyard_passthrough_backend switchyard_passthrough.backend;
    upstream switchyard_passthrough_none { server 127.0.0.1:1 down; }
    server {
        listen 127.0.0.1:%[2]d;
        ssl_preread on;
        proxy_pass $switchyard_passthrough_backend;
    }
}
`, harness.ModulesDir, port), map[string]string{
		"passthrough.js":         templates.PassthroughJS,
		"pass/pass.example.com":  endpointA,
		"pass/multi.example.com": fmt.Sprintf("127.0.0.1:%d\n127.0.0.1:%d\n", a, b),
		"pass/empty.example.com": "",
		"pass/junk.example.com":  "127.0.0.1:1; evil\nbackend.local:443\n",
		"pass/.hidden":           endpointA,
		"escape":                 endpointA,
		"pass/sub/x.example.com": endpointA,
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	harness.WaitFor(t, changeTimeout, "the script's server", func() error {
		return harness.ExpectCertificatePEM(addr, "pass.example.com", certA)
	})
	if err := harness.ExpectCertificatePEM(addr, "PASS.Example.COM", certA); err != nil {
		t.Fatalf("upper-case SNI: %v", err)
	}
	seen := map[string]bool{}
	for i := 0; i < 64 && len(seen) < 2; i++ {
		_, cn, err := harness.ServedCertificate(addr, "multi.example.com")
		if err != nil {
			t.Fatalf("multi.example.com: %v", err)
		}
		seen[cn] = true
	}
	if !seen["a.example.com"] || !seen["b.example.com"] {
		t.Fatalf("64 connections to a host with two endpoints reached only %v", seen)
	}
	// (Go's client drops a trailing dot from the name it sends.)
	for _, sni := range []string{"../escape", "pass/../../escape", ".hidden", "sub/x.example.com", "pass.example.com\x00",
		"nothere.example.com", "empty.example.com", "junk.example.com", "pass.example.com/", "pass..example.com"} {
		if _, cn, err := harness.ServedCertificate(addr, sni); err == nil {
			t.Errorf("SNI %q was served (%s)", sni, cn)
		}
	}
}
