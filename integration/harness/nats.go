package harness

import (
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// StartNATS runs a NATS server with JetStream on a free loopback port, as
// the external bus of stages run as separate processes; it is shut down
// when the test ends.
func StartNATS(t testing.TB) *server.Server {
	t.Helper()
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	return ns
}
