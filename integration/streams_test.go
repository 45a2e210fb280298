package integration

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
)

// streamServiceYAML is a Service with one port (7000, named "tcp" or
// "udp" after protocol) whose EndpointSlice points at the loopback
// backend on port.
func streamServiceYAML(name, protocol string, port int) string {
	pname := strings.ToLower(protocol)
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %[1]s, namespace: default}
spec:
  ports: [{name: %[2]s, port: 7000, protocol: %[3]s}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[1]s-1
  namespace: default
  labels: {kubernetes.io/service-name: %[1]s}
addressType: IPv4
ports: [{name: %[2]s, port: %[4]d, protocol: %[3]s}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
`, name, pname, protocol, port)
}

// startTCPEcho serves lines: each is answered with "<name> <line>". With
// proxyHeader, the connection must start with a PROXY v1 header, and each
// answer is "<name> <source address of the header>".
func startTCPEcho(t testing.TB, name string, proxyHeader bool) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return harness.ServeConns(t, l, func(c net.Conn) { serveTCPEcho(c, name, proxyHeader) })
}

func serveTCPEcho(c net.Conn, name string, proxyHeader bool) {
	defer c.Close()
	r := bufio.NewReader(c)
	source := ""
	if proxyHeader {
		line, err := r.ReadString('\n')
		fields := strings.Fields(line)
		if err != nil || len(fields) < 3 || fields[0] != "PROXY" {
			fmt.Fprintf(c, "%s no PROXY header: %q\n", name, line)
			return
		}
		source = fields[2]
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return
		}
		reply := strings.TrimSpace(line)
		if proxyHeader {
			reply = source
		}
		if _, err := fmt.Fprintf(c, "%s %s\n", name, reply); err != nil {
			return
		}
	}
}

// startUDPEcho answers each datagram with "<name> <datagram>".
func startUDPEcho(t testing.TB, name string) int {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 2048)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(append([]byte(name+" "), buf[:n]...), from)
		}
	}()
	return pc.LocalAddr().(*net.UDPAddr).Port
}

// tcpConn is one open client connection to a TCP service.
type tcpConn struct {
	c net.Conn
	r *bufio.Reader
}

func dialTCP(port int, header []byte) (*tcpConn, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 5*time.Second)
	if err != nil {
		return nil, err
	}
	if _, err := c.Write(header); err != nil {
		c.Close()
		return nil, err
	}
	return &tcpConn{c: c, r: bufio.NewReader(c)}, nil
}

// say sends one line and returns the answer, without its line break.
func (t *tcpConn) say(line string) (string, error) {
	_ = t.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(t.c, "%s\n", line); err != nil {
		return "", err
	}
	reply, err := t.r.ReadString('\n')
	return strings.TrimSpace(reply), err
}

// tcpOnce opens a connection, sends one line and closes it.
func tcpOnce(port int, header []byte, line string) (string, error) {
	c, err := dialTCP(port, header)
	if err != nil {
		return "", err
	}
	defer c.c.Close()
	return c.say(line)
}

func udpOnce(port int, msg string) (string, error) {
	c, err := net.Dial("udp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return "", err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Write([]byte(msg)); err != nil {
		return "", err
	}
	buf := make([]byte, 2048)
	n, err := c.Read(buf)
	return string(buf[:n]), err
}

func expectReply(got string, err error, want string) error {
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

// TestTCPAndUDPServicesThroughNginx: the tcp-services and udp-services
// ConfigMaps through the whole pipeline to NGINX's stream module, with
// real TCP and UDP backends. An endpoint change of one service (a reload)
// reaches new connections while an established connection of another
// service keeps working; a PROXY entry decodes the client's header and
// sends the client address on; bad entries are reported by ConfigMap and
// key while the good ones serve.
func TestTCPAndUDPServicesThroughNginx(t *testing.T) {
	e := &env{t: t, dir: t.TempDir()}
	a1, a2 := startTCPEcho(t, "a1", false), startTCPEcho(t, "a2", false)
	b := startTCPEcho(t, "b", false)
	p := startTCPEcho(t, "p", true)
	u := startUDPEcho(t, "u")
	portA, portB, portP, portU := harness.FreePort(t), harness.FreePort(t), harness.FreePort(t), harness.FreePort(t)
	services := func(aPort int) string {
		return strings.Join([]string{streamServiceYAML("svc-a", "TCP", aPort), streamServiceYAML("svc-b", "TCP", b),
			streamServiceYAML("svc-p", "TCP", p), streamServiceYAML("svc-u", "UDP", u)}, "---\n")
	}
	e.write("services.yaml", services(a1))
	e.write("tcp.yaml", defaultConfigMapYAML("tcp", map[string]string{
		fmt.Sprint(portA): "default/svc-a:7000",
		fmt.Sprint(portB): "default/svc-b:tcp", // the port by name
		fmt.Sprint(portP): "default/svc-p:7000:PROXY:PROXY",
		"9":               "default/missing:7000",
		"70000":           "default/svc-a:7000",
		"19":              "default/svc-a:7000:TLS",
	}))
	e.write("udp.yaml", defaultConfigMapYAML("udp", map[string]string{fmt.Sprint(portU): "default/svc-u:udp"}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--tcp-services-configmap", "default/tcp", "--udp-services-configmap", "default/udp")

	harness.WaitFor(t, changeTimeout, "TCP echo through the tcp-services ConfigMap", func() error {
		got, err := tcpOnce(portA, nil, "hello")
		return expectReply(got, err, "a1 hello")
	})
	harness.WaitFor(t, changeTimeout, "UDP echo through the udp-services ConfigMap", func() error {
		got, err := udpOnce(portU, "ping")
		return expectReply(got, err, "u ping")
	})
	client := netip.MustParseAddr("203.0.113.7")
	got, err := tcpOnce(portP, proxyV1(client), "who")
	if err := expectReply(got, err, "p "+client.String()); err != nil {
		t.Fatalf("PROXY entry: the backend should see the client address of the decoded header: %v", err)
	}
	for _, want := range []string{
		`"field": "data.9", "reason": "ServiceNotFound"`,
		`"field": "data.70000", "reason": "InvalidEntry"`,
		`"field": "data.19", "reason": "InvalidEntry"`,
	} {
		if !strings.Contains(e.sy.Output.String(), want) {
			t.Errorf("bad entry not reported as %s", want)
		}
	}

	// An established connection to B, then an endpoint change of A.
	conn, err := dialTCP(portB, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.c.Close()
	if got, err := conn.say("before"); expectReply(got, err, "b before") != nil {
		t.Fatalf("service B: %q %v", got, err)
	}
	masterBefore := e.sy.MasterPID(t)
	e.write("services.yaml", services(a2))
	harness.WaitFor(t, changeTimeout, "new connections of A on its new endpoint", func() error {
		got, err := tcpOnce(portA, nil, "again")
		return expectReply(got, err, "a2 again")
	})
	if e.sy.MasterPID(t) != masterBefore {
		t.Fatal("NGINX's master changed: the endpoint change restarted NGINX instead of reloading it")
	}
	if got, err := conn.say("after"); expectReply(got, err, "b after") != nil {
		t.Fatalf("the open connection to B after A's endpoint change (a reload): %q %v", got, err)
	}
	harness.WaitFor(t, changeTimeout, "UDP after the reload", func() error {
		got, err := udpOnce(portU, "ping")
		return expectReply(got, err, "u ping")
	})

	// A port Switchyard itself uses is refused, the others keep serving.
	_, httpPort, _ := net.SplitHostPort(e.sy.HTTPAddr)
	e.write("tcp.yaml", defaultConfigMapYAML("tcp", map[string]string{
		fmt.Sprint(portA): "default/svc-a:7000",
		httpPort:          "default/svc-b:tcp",
	}))
	harness.WaitFor(t, changeTimeout, "the HTTP port refused as a TCP service", func() error {
		if !strings.Contains(e.sy.Output.String(), `"field": "data.`+httpPort+`", "reason": "ReservedPort"`) {
			return errors.New("not reported yet")
		}
		return nil
	})
	harness.WaitFor(t, changeTimeout, "A after the ConfigMap change", func() error {
		got, err := tcpOnce(portA, nil, "still")
		return expectReply(got, err, "a2 still")
	})
	harness.WaitFor(t, changeTimeout, "B's entry gone", func() error {
		if _, err := tcpOnce(portB, nil, "gone"); err == nil {
			return errors.New("port B still answers")
		}
		return nil
	})
	if got, err := conn.say("last"); expectReply(got, err, "b last") != nil {
		t.Fatalf("the open connection to B after its entry was removed (old workers keep it): %q %v", got, err)
	}
}

// TestHeldServicesPortIsRefused: a services entry on a port another
// process holds passes nginx -t, but the master cannot bind it on the
// reload. The applier traces NGINX's bind() complaint to the entry and
// refuses it: the entry is left out and reported with its ConfigMap and
// key, every other entry and Ingress reloads and serves, and once the port
// is free the entry comes back.
func TestHeldServicesPortIsRefused(t *testing.T) {
	e := newBackends(t)
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	heldPort := held.Addr().(*net.TCPAddr).Port
	a := startTCPEcho(t, "a", false)
	portB := harness.FreePort(t)
	e.write("stream-services.yaml", streamServiceYAML("svc-a", "TCP", a))
	e.write("tcp.yaml", defaultConfigMapYAML("tcp", map[string]string{}))
	e.sy = harness.StartSwitchyard(t, e.dir, "--tcp-services-configmap", "default/tcp")
	defer func() {
		if t.Failed() {
			t.Log(e.sy.Output.String())
		}
	}()
	e.write("one.yaml", harness.IngressYAML("default", "one", "one.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	waitStatus(t, e.sy, "one.example.com", 200)

	e.write("tcp.yaml", defaultConfigMapYAML("tcp", map[string]string{
		fmt.Sprint(heldPort): "default/svc-a:7000",
		fmt.Sprint(portB):    "default/svc-a:7000",
	}))
	e.write("two.yaml", harness.IngressYAML("default", "two", "two.example.com", harness.Path{Path: "/", Type: "Prefix", Service: "echo-a"}))
	harness.WaitFor(t, changeTimeout, "the held port's entry refused and reported", func() error {
		out := e.sy.Output.String()
		for _, want := range []string{
			`"kind": "services", "name": "tcp/` + fmt.Sprint(heldPort) + `"`,
			"bind() to 127.0.0.1:" + fmt.Sprint(heldPort),
			fmt.Sprintf("TCP service on port %d (ConfigMap default/tcp, key %d): NGINX refused it", heldPort, heldPort),
		} {
			if !strings.Contains(out, want) {
				return fmt.Errorf("not logged yet: %s", want)
			}
		}
		return nil
	})
	// Everything else reloaded: the new Ingress and the other entry serve.
	waitStatus(t, e.sy, "two.example.com", 200)
	harness.WaitFor(t, changeTimeout, "the other entry served", func() error {
		got, err := tcpOnce(portB, nil, "b")
		return expectReply(got, err, "a b")
	})
	waitStatus(t, e.sy, "one.example.com", 200)

	// The port frees: the entry comes back.
	held.Close()
	harness.WaitFor(t, changeTimeout, "the entry served once its port is free", func() error {
		got, err := tcpOnce(heldPort, nil, "back")
		return expectReply(got, err, "a back")
	})
	if got, err := tcpOnce(portB, nil, "still"); expectReply(got, err, "a still") != nil {
		t.Errorf("the other entry after the held one came back: %q %v", got, err)
	}
}
