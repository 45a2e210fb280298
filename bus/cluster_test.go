package bus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"switchyard.dev/switchyard/internal/freeport"
)

// startCluster runs n clustered nats-servers with JetStream on loopback.
func startCluster(t *testing.T, n int) []*server.Server {
	t.Helper()
	ports := make([]int, n)
	var routes []string
	for i := range ports {
		port, err := freeport.Loopback()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = port
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", ports[i]))
	}
	servers := make([]*server.Server, n)
	for i := range servers {
		s, err := server.NewServer(&server.Options{
			ServerName: fmt.Sprintf("n%d", i), Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(),
			NoSigs: true, NoLog: true, MaxPayload: MaxPayload,
			Cluster: server.ClusterOpts{Name: "switchyard", Host: "127.0.0.1", Port: ports[i]},
			Routes:  server.RoutesFromStr(strings.Join(routes, ",")),
		})
		if err != nil {
			t.Fatal(err)
		}
		s.Start()
		servers[i] = s
		t.Cleanup(s.Shutdown)
	}
	for _, s := range servers {
		if !s.ReadyForConnections(20 * time.Second) {
			t.Fatal("a cluster node is not ready")
		}
	}
	return servers
}

// TestReplicatedStreamsSurviveTheirLeader: on a three-node cluster with
// --nats-replicas 3, the node leading a table's stream goes away; the
// table keeps what it had, the writer's next generation gets through, and
// a follower sees it, with nobody restarted.
func TestReplicatedStreamsSurviveTheirLeader(t *testing.T) {
	servers := startCluster(t, 3)
	var urls []string
	for _, s := range servers {
		urls = append(urls, s.ClientURL())
	}
	connect := func(name string) *Conn {
		c, err := Connect(strings.Join(urls, ","), name)
		if err != nil {
			t.Fatal(err)
		}
		c.ReplicateStreams(3)
		t.Cleanup(c.Close)
		return c
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	writerConn, readerConn := connect("watcher"), connect("translator")
	w := NewWriter(writerConn, StageWatcher)
	if _, err := w.Publish(ctx, Meta{Generation: 1}, map[string][]byte{"object.a": []byte("1"), "object.b": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	states := followState(ctx, readerConn, StageWatcher)
	waitState(t, states, map[string]string{"object.a": "1", "object.b": "2"})

	stream, err := writerConn.JS.Stream(ctx, StreamName(StageWatcher))
	if err != nil {
		t.Fatal(err)
	}
	info := stream.CachedInfo()
	if info.Config.Replicas != 3 || info.Config.Storage != jetstream.FileStorage || info.Cluster == nil {
		t.Fatalf("stream kept %d times in %v (cluster %+v), want 3 on disk", info.Config.Replicas, info.Config.Storage, info.Cluster)
	}
	leader := info.Cluster.Leader
	for _, s := range servers {
		if s.Name() == leader {
			s.Shutdown()
		}
	}

	if _, err := w.Publish(ctx, Meta{Generation: 2}, map[string][]byte{"object.a": []byte("1"), "object.b": []byte("22"), "object.c": []byte("3")}); err != nil {
		t.Fatalf("publish after the leader went away: %v", err)
	}
	// A stage started now reads the whole table from the survivors.
	entries, meta, err := ReadTable(ctx, connect("renderer"), StageWatcher)
	if err != nil || meta.Generation != 2 || len(entries) != 3 {
		t.Fatalf("table after the leader went away: %v, generation %d, %v", entries, meta.Generation, err)
	}
	waitState(t, states, map[string]string{"object.a": "1", "object.b": "22", "object.c": "3"})
}
