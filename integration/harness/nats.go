package harness

import (
	"os/exec"
	"path/filepath"
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
