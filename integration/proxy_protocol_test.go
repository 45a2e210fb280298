package integration

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// TestProxyProtocol: with use-proxy-protocol, a PROXY header (v1 or v2)
// from a peer in proxy-real-ip-cidr gives the client address the backend
// sees; from any other peer it changes nothing; a connection without the
// header is not served.
func TestProxyProtocol(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("pp", nil))
	// Started without it (the harness waits for a plain request), then
	// switched on, as an operator would behind a new load balancer.
	e.write("config.yaml", configMapYAML(map[string]string{"proxy-real-ip-cidr": "127.0.0.1/32"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	e.write("config.yaml", configMapYAML(map[string]string{"use-proxy-protocol": "true", "proxy-real-ip-cidr": "127.0.0.1/32"}))
	client := netip.MustParseAddr("203.0.113.7")

	realIP := func(header []byte) (string, error) {
		reply, err := getBehindProxyProtocol(e.sy.HTTPAddr, header, "pp.example.com")
		if err != nil {
			return "", err
		}
		return strings.Join(reply.Headers["X-Real-Ip"], ","), nil
	}
	harness.WaitFor(t, changeTimeout, "pp.example.com served behind a PROXY v1 header", func() error {
		got, err := realIP(proxyV1(client))
		if err == nil && got != client.String() {
			err = fmt.Errorf("backend saw X-Real-IP %q, want %s", got, client)
		}
		return err
	})
	// Polled too: until the reload settles, a worker of the configuration
	// before may take the connection and refuse the header as a request.
	harness.WaitFor(t, changeTimeout, "pp.example.com served behind a PROXY v2 header", func() error {
		got, err := realIP(proxyV2(client))
		if err == nil && got != client.String() {
			err = fmt.Errorf("backend saw X-Real-IP %q, want %s", got, client)
		}
		return err
	})
	// Each try is a new connection (the harness's own client keeps one from
	// before), polled: workers of the configuration before may still take
	// a connection or two while the reload settles.
	harness.WaitFor(t, changeTimeout, "a connection without a PROXY header refused", func() error {
		if r, err := e.tryWith("pp.example.com", "/", nil); err == nil && r.Status == 200 {
			return fmt.Errorf("served: %d", r.Status)
		}
		return nil
	})

	// The peer (127.0.0.1) is no longer trusted: its header is read but
	// its address is not taken.
	e.write("config.yaml", configMapYAML(map[string]string{"use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/8"}))
	harness.WaitFor(t, changeTimeout, "the PROXY address ignored from an untrusted peer", func() error {
		got, err := realIP(proxyV1(client))
		if err == nil && got != "127.0.0.1" {
			err = fmt.Errorf("backend saw X-Real-IP %q, want 127.0.0.1", got)
		}
		return err
	})
}

// proxyV1 is a PROXY protocol v1 header from client to 127.0.0.1:80.
func proxyV1(client netip.Addr) []byte {
	return fmt.Appendf(nil, "PROXY TCP4 %s 127.0.0.1 51000 80\r\n", client)
}

// proxyV2 is the binary v2 header of the same connection.
func proxyV2(client netip.Addr) []byte {
	h := []byte("\r\n\r\n\x00\r\nQUIT\n")
	h = append(h, 0x21, 0x11) // version 2, PROXY; TCP over IPv4
	h = binary.BigEndian.AppendUint16(h, 12)
	src, dst := client.As4(), netip.MustParseAddr("127.0.0.1").As4()
	h = append(append(h, src[:]...), dst[:]...)
	h = binary.BigEndian.AppendUint16(h, 51000)
	return binary.BigEndian.AppendUint16(h, 80)
}

// getBehindProxyProtocol sends header, then GET / for host, on one
// connection, as a load balancer speaking the PROXY protocol would.
func getBehindProxyProtocol(addr string, header []byte, host string) (*harness.EchoReply, error) {
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	request := fmt.Sprintf("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host)
	if _, err := conn.Write(append(header, request...)); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("status %d: %s", resp.StatusCode, truncate(body))
	}
	var reply harness.EchoReply
	if err := json.Unmarshal(body, &reply); err != nil {
		return nil, fmt.Errorf("not an echo answer: %v", err)
	}
	return &reply, nil
}

// TestSourceRangesBehindProxyProtocol: with use-proxy-protocol, the source
// ranges see the PROXY header's client (IPv4 or IPv6) when the peer is in
// proxy-real-ip-cidr, and the peer itself otherwise; the host stays
// Lua-routed. Run with both routings (Makefile SERVER_BLOCK_TESTS).
func TestSourceRangesBehindProxyProtocol(t *testing.T) {
	e := newBackends(t)
	e.write("ing.yaml", annotatedIngressYAML("pp", map[string]string{
		upstreamPrefix + "allowlist-source-range": "203.0.113.0/24, 2001:db8::/32, 127.0.0.1"}))
	e.write("config.yaml", configMapYAML(map[string]string{"proxy-real-ip-cidr": "127.0.0.1/32"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)
	e.write("config.yaml", configMapYAML(map[string]string{"use-proxy-protocol": "true", "proxy-real-ip-cidr": "127.0.0.1/32"}))
	v6 := func(client string) []byte { return fmt.Appendf(nil, "PROXY TCP6 %s ::1 51000 80\r\n", client) }
	answers := func(header []byte, want string) func() error {
		return func() error {
			_, err := getBehindProxyProtocol(e.sy.HTTPAddr, header, "pp.example.com")
			switch {
			case want == "200" && err != nil:
				return err
			case want != "200" && (err == nil || !strings.HasPrefix(err.Error(), "status "+want)):
				return fmt.Errorf("%v, want status %s", err, want)
			}
			return nil
		}
	}
	harness.WaitFor(t, changeTimeout, "an allowed client behind a PROXY header", answers(proxyV1(netip.MustParseAddr("203.0.113.7")), "200"))
	expectRouting(t, e.sy, map[string]bool{"pp.example.com": true})
	for _, c := range []struct {
		what   string
		header []byte
		want   string
	}{
		{"a client off the list (v1)", proxyV1(netip.MustParseAddr("198.51.100.7")), "403"},
		{"an allowed client (v2)", proxyV2(netip.MustParseAddr("203.0.113.9")), "200"},
		{"a client off the list (v2)", proxyV2(netip.MustParseAddr("198.51.100.7")), "403"},
		{"an allowed IPv6 client", v6("2001:db8::7"), "200"},
		{"an IPv6 client off the list", v6("2001:db9::7"), "403"},
	} {
		// Polled: until the reload settles, a worker of the configuration
		// before may take the connection and refuse the header.
		harness.WaitFor(t, changeTimeout, c.what, answers(c.header, c.want))
	}
	// 127.0.0.1 is no longer trusted: its header's client is not taken,
	// so an unlisted client gets in only as the peer it came through.
	e.write("ing.yaml", annotatedIngressYAML("pp", map[string]string{upstreamPrefix + "allowlist-source-range": "203.0.113.0/24"}))
	e.write("config.yaml", configMapYAML(map[string]string{"use-proxy-protocol": "true", "proxy-real-ip-cidr": "10.0.0.0/8"}))
	harness.WaitFor(t, changeTimeout, "the PROXY address ignored from an untrusted peer", answers(proxyV1(netip.MustParseAddr("203.0.113.7")), "403"))
}
