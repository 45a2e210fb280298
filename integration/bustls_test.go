package integration

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// TestSplitModeOnATLSBus runs every stage as its own process on a
// two-node bus whose client port and routes are TLS only (switchyard bus
// --tls-cert, --tls-key, --tls-ca; the stages' --nats-ca): an Ingress is
// served through streams kept on both nodes, so the routes carried them.
// A client that does not trust the nodes' CA gets no connection, and a
// node announces TLS as required to anyone who connects in clear.
func TestSplitModeOnATLSBus(t *testing.T) {
	harness.Nginx(t)
	certFile, keyFile := busNodeCertificate(t)
	cluster := harness.StartBusClusterWith(t, 2, "--tls-cert", certFile, "--tls-key", keyFile, "--tls-ca", certFile)

	procs := newStageProcs(t, "--nats", cluster.ClientURLs(), "--nats-keys", cluster.Keys, "--nats-ca", certFile,
		"--nats-replicas", "2")
	for _, name := range []string{"applier", "renderer", "annotations", "translator", "watcher"} {
		procs.start(name)
	}
	harness.WaitFor(t, 90*time.Second, "an Ingress served through the TLS bus", procs.served("one.example.com"))
	procs.ingress("two")
	harness.WaitFor(t, 60*time.Second, "a change served through the TLS bus", procs.served("two.example.com"))

	node := cluster.Nodes[0].ClientURL
	seed := bus.SeedFile(cluster.Keys, bus.IdentityTrace)
	auth, err := bus.ClientOptions(bus.IdentityTrace, seed)
	if err != nil {
		t.Fatal(err)
	}
	// The right key but not the CA: the node's certificate is not trusted.
	if nc, err := nats.Connect(node, append(auth, nats.Secure(), nats.MaxReconnects(0))...); err == nil {
		nc.Close()
		t.Fatal("a client that does not trust the bus CA connected")
	} else if !strings.Contains(err.Error(), "certificate") {
		t.Errorf("connecting without the CA: %v, want a certificate error", err)
	}
	// The CA and the key: connected, over TLS.
	nc, err := nats.Connect(node, append(auth, nats.RootCAs(certFile), nats.MaxReconnects(0))...)
	if err != nil {
		t.Fatalf("trace with the CA: %v", err)
	}
	if state, err := nc.TLSConnectionState(); err != nil || !state.HandshakeComplete {
		t.Errorf("trace's connection is not TLS: %v", err)
	}
	nc.Close()
	// In clear, the client port's first words say TLS is required; the
	// route port says nothing in clear (it waits for a TLS handshake) and
	// completes one with a certificate of the CA.
	if info := firstLine(t, strings.TrimPrefix(node, "nats://"), 5*time.Second); !strings.Contains(info, `"tls_required":true`) {
		t.Errorf("the client port's INFO in clear: %q; want tls_required", info)
	}
	route := cluster.Nodes[0].Cluster
	if info := firstLine(t, route, 2*time.Second); info != "" && !strings.Contains(info, `"tls_required":true`) {
		t.Errorf("the route port's INFO in clear: %q; want none, or tls_required", info)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(pair.Leaf)
	tc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", route,
		&tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatalf("a TLS handshake with the route port: %v", err)
	}
	_ = tc.Close()
}

// firstLine is what a server says first, within wait, to a client that
// connects to addr in clear; "" when it says nothing.
func firstLine(t *testing.T, addr string, wait time.Duration) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetReadDeadline(time.Now().Add(wait))
	line, _ := bufio.NewReader(conn).ReadString('\n')
	return line
}

// busNodeCertificate writes the bus nodes' certificate on loopback (its
// own CA) and its key.
func busNodeCertificate(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	cert, key := harness.LoopbackCertificate(t, "switchyard-bus")
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	harness.WriteFile(t, certFile, string(cert))
	harness.WriteFile(t, keyFile, string(key))
	return certFile, keyFile
}
