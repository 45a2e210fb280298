package harness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NATS is an external bus for stages run as separate processes.
type NATS struct {
	*server.Server
	// Keys is the directory of the bus identities' seeds (--nats-keys).
	Keys string
}

// StartNATS runs a NATS server with JetStream on a free loopback port,
// locked as an operator would lock it: with the authorization `switchyard
// buskeys` writes, so only the bus identities get in. It is shut down
// when the test ends.
func StartNATS(t testing.TB) *NATS {
	t.Helper()
	keys := BusKeys(t)
	opts, err := server.ProcessConfigFile(filepath.Join(keys, "nats-auth.conf"))
	if err != nil {
		t.Fatalf("the authorization of switchyard buskeys: %v", err)
	}
	opts.Host, opts.Port, opts.JetStream, opts.StoreDir, opts.NoSigs, opts.NoLog = "127.0.0.1", -1, true, t.TempDir(), true, true
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	return &NATS{Server: ns, Keys: keys}
}

// BusKeys creates the bus identities' keys with `switchyard buskeys` in a
// new directory, for --nats-keys.
func BusKeys(t testing.TB) string {
	t.Helper()
	keys := t.TempDir()
	if out, err := exec.Command(Binary(t), "buskeys", keys).CombinedOutput(); err != nil {
		t.Fatalf("switchyard buskeys: %v\n%s", err, out)
	}
	return keys
}

// BusCluster is split mode's NATS cluster: n `switchyard bus` processes
// on loopback, routed to each other, locked with the keys in Keys.
type BusCluster struct {
	Keys  string
	Nodes []*BusNode
}

// BusNode is one node of a BusCluster.
type BusNode struct {
	Name      string
	ClientURL string
	// Monitor is the address of its monitoring endpoints (/healthz, /jsz).
	Monitor string
	// Cluster is the address the other nodes' routes connect to; "" for
	// a single node.
	Cluster string
	*Process
}

// StartBusCluster starts n nodes and waits until each reports JetStream
// healthy (the cluster has elected its meta leader). One node is a single
// node, without routes, as split mode runs on a small cluster.
func StartBusCluster(t testing.TB, n int) *BusCluster {
	t.Helper()
	return StartBusClusterWith(t, n)
}

// StartBusClusterWith is StartBusCluster with more flags for every node
// (e.g. --tls-cert).
func StartBusClusterWith(t testing.TB, n int, extra ...string) *BusCluster {
	t.Helper()
	bin := Binary(t)
	c := &BusCluster{Keys: BusKeys(t)}
	var routes []string
	clusterPorts := make([]int, n)
	for i := range clusterPorts {
		clusterPorts[i] = FreePort(t)
		routes = append(routes, fmt.Sprintf("127.0.0.1:%d", clusterPorts[i]))
	}
	for i := range n {
		node := &BusNode{Name: fmt.Sprintf("n%d", i), ClientURL: fmt.Sprintf("nats://127.0.0.1:%d", FreePort(t)),
			Monitor: fmt.Sprintf("127.0.0.1:%d", FreePort(t)), Cluster: routes[i]}
		args := []string{"bus", "--name", node.Name, "--listen", strings.TrimPrefix(node.ClientURL, "nats://"),
			"--monitor-listen", node.Monitor, "--store-dir", t.TempDir(), "--nats-keys", c.Keys}
		if n > 1 {
			// One node is a single node (no --routes): routed only to
			// itself, its JetStream never becomes healthy.
			args = append(args, "--cluster-listen", routes[i], "--routes", strings.Join(routes, ","),
				"--cluster-password-file", filepath.Join(c.Keys, "cluster.pass"))
		} else {
			node.Cluster = ""
		}
		node.Process = Start(t, bin, append(args, extra...)...)
		c.Nodes = append(c.Nodes, node)
	}
	for _, node := range c.Nodes {
		node.WaitHealthy(t)
	}
	return c
}

// WaitHealthy waits until the node's /healthz answers 200: JetStream is up
// and every stream and consumer it keeps is current.
func (n *BusNode) WaitHealthy(t testing.TB) {
	t.Helper()
	WaitFor(t, 60*time.Second, "bus node "+n.Name+" healthy", func() error {
		resp, err := http.Get("http://" + n.Monitor + "/healthz")
		if err != nil {
			return err
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/healthz %d", resp.StatusCode)
		}
		return nil
	})
}

// ClientURLs are every node's URL, comma-separated, for --nats.
func (c *BusCluster) ClientURLs() string {
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, n.ClientURL)
	}
	return strings.Join(urls, ",")
}

// StreamLeader is the name of the node leading stream, as the monitoring
// endpoint of a live node says; "" while it has none.
func (c *BusCluster) StreamLeader(stream string) (string, error) {
	for _, n := range c.Nodes {
		if n.Exited() {
			continue
		}
		resp, err := http.Get("http://" + n.Monitor + "/jsz?accounts=true&streams=true")
		if err != nil {
			return "", err
		}
		var jsz struct {
			Accounts []struct {
				Streams []struct {
					Name    string `json:"name"`
					Cluster *struct {
						Leader string `json:"leader"`
					} `json:"cluster"`
				} `json:"stream_detail"`
			} `json:"account_details"`
		}
		err = json.NewDecoder(resp.Body).Decode(&jsz)
		_ = resp.Body.Close()
		if err != nil {
			return "", err
		}
		for _, a := range jsz.Accounts {
			for _, s := range a.Streams {
				if s.Name == stream && s.Cluster != nil {
					return s.Cluster.Leader, nil
				}
			}
		}
		return "", fmt.Errorf("no stream %s on %s", stream, n.Name)
	}
	return "", fmt.Errorf("no live node")
}
