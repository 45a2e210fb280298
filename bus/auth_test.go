package bus

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// newKeys makes a key for every identity in a new directory, and returns
// it with the public keys.
func newKeys(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	if err := GenerateKeys(dir); err != nil {
		t.Fatal(err)
	}
	keys, err := PublicKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, keys
}

// lockedBus starts an embedded bus listening on loopback with a key for
// every identity; it returns the server and the keys' directory.
func lockedBus(t *testing.T) (*Embedded, string) {
	t.Helper()
	dir, keys := newKeys(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	e, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir(), Listen: addr, Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	return e, dir
}

// dialAs connects to the bus over TCP as identity; violations of its
// permissions arrive on the returned channel.
func dialAs(t *testing.T, e *Embedded, dir, identity string) (*nats.Conn, <-chan error) {
	t.Helper()
	opts, err := ClientOptions(identity, SeedFile(dir, identity))
	if err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case errs <- err:
		default:
		}
	}))
	nc, err := nats.Connect(e.ClientURL(), opts...)
	if err != nil {
		t.Fatalf("connect as %s: %v", identity, err)
	}
	t.Cleanup(nc.Close)
	return nc, errs
}

// connectAs opens a table connection to e over TCP as identity.
func connectAs(t *testing.T, e *Embedded, dir, identity string) *Conn {
	t.Helper()
	opts, err := ClientOptions(identity, SeedFile(dir, identity))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Connect(e.ClientURL(), identity, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func expectViolation(t *testing.T, errs <-chan error, what string) {
	t.Helper()
	select {
	case err := <-errs:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Fatalf("%s: %v, want a permissions violation", what, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no permissions violation reported", what)
	}
}

// TestLockedBusRefusesStrangers: a listening bus needs keys, and admits
// no client without one.
func TestLockedBusRefusesStrangers(t *testing.T) {
	if _, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir(), Listen: "127.0.0.1:0"}); err == nil {
		t.Fatal("a bus listened without keys")
	}
	e, _ := lockedBus(t)
	if nc, err := nats.Connect(e.ClientURL(), nats.Name("stranger")); err == nil {
		nc.Close()
		t.Fatal("a client without a key was admitted")
	}
	other := t.TempDir()
	if err := GenerateKeys(other); err != nil {
		t.Fatal(err)
	}
	opts, err := ClientOptions(StageRenderer, SeedFile(other, StageRenderer))
	if err != nil {
		t.Fatal(err)
	}
	if nc, err := nats.Connect(e.ClientURL(), opts...); err == nil {
		nc.Close()
		t.Fatal("a key the bus does not know was admitted")
	}
}

// TestIdentitiesKeepToTheirSubjects: the pipeline works with each stage
// on its own identity, and no identity can publish another's subjects or
// read a table it does not need.
func TestIdentitiesKeepToTheirSubjects(t *testing.T) {
	e, dir := lockedBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	connect := func(identity string) *Conn { return connectAs(t, e, dir, identity) }
	// The watcher writes its table; the translator follows it.
	watcher, translator := connect(StageWatcher), connect(StageTranslator)
	if _, err := NewWriter(watcher, StageWatcher).Publish(ctx, Meta{Generation: 1}, map[string][]byte{"object.a": []byte("1")}); err != nil {
		t.Fatalf("the watcher publishes its table: %v", err)
	}
	entries, _, err := ReadTable(ctx, translator, StageWatcher)
	if err != nil || string(entries["object.a"]) != "1" {
		t.Fatalf("the translator reads the watcher's table: %v %v", entries, err)
	}

	// The translator cannot publish as the renderer, and cannot follow
	// the renderer's table.
	nc, errs := dialAs(t, e, dir, StageTranslator)
	if err := nc.Publish(StageSubject(StageRenderer)+".file.nginx_2econf", []byte("forged")); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	expectViolation(t, errs, "the translator publishing a renderer subject")
	if err := nc.Publish(TraceSubject(StageSubject(StageRenderer))+".file.nginx_2econf", nil); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	expectViolation(t, errs, "the translator publishing the renderer's trace copies")
	if _, err := nc.SubscribeSync(StageSubject(StageWatcher) + ".>"); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	expectViolation(t, errs, "the translator subscribing to the watcher's subjects directly")
	if _, err := nc.SubscribeSync("_INBOX.>"); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	expectViolation(t, errs, "the translator reading other identities' replies")
	short, stop := context.WithTimeout(ctx, 3*time.Second)
	defer stop()
	if _, _, err := readTable(short, translator, StageRenderer); err == nil {
		t.Fatal("the translator read the renderer's table")
	}
}

// TestTraceSeesHeadersOnly: trace gets every message's headers from the
// streams' copies and never a value; it cannot read the tables.
func TestTraceSeesHeadersOnly(t *testing.T) {
	e, dir := lockedBus(t)
	internal, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(internal.Close)
	nc, errs := dialAs(t, e, dir, IdentityTrace)
	copies, err := nc.SubscribeSync(TraceRoot + ".>")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	secret := "-----BEGIN PRIVATE KEY----- secret"
	if _, err := NewWriter(internal, StageWatcher).Publish(ctx, Meta{Generation: 7}, map[string][]byte{"object.secret.ns.tls": []byte(secret)}); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) < 2 {
		m, err := copies.NextMsg(10 * time.Second)
		if err != nil {
			t.Fatalf("trace copies so far %v: %v", seen, err)
		}
		if len(m.Data) != 0 {
			t.Fatalf("trace received a payload on %s: %q", m.Subject, m.Data)
		}
		if MetaFromHeader(m.Header).Generation != 7 {
			t.Errorf("%s: headers not carried: %v", m.Subject, m.Header)
		}
		seen = append(seen, m.Subject)
	}
	slices.Sort(seen)
	want := []string{TraceRoot + ".watcher.commit", TraceRoot + ".watcher.object.secret.ns.tls"}
	if !slices.Equal(seen, want) {
		t.Errorf("trace saw %v, want %v", seen, want)
	}
	if _, err := nc.SubscribeSync(Root + ".>"); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	expectViolation(t, errs, "trace subscribing to the tables")
	if err := nc.Publish(StageSubject(StageWatcher)+".object.x", nil); err != nil {
		t.Fatal(err)
	}
	_ = nc.Flush()
	expectViolation(t, errs, "trace publishing")
}

// TestServerConfigMatchesEmbedded: the authorization buskeys writes for
// an external nats-server grants exactly what the embedded server does.
func TestServerConfigMatchesEmbedded(t *testing.T) {
	dir, keys := newKeys(t)
	conf, err := ServerConfig(keys)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "nats.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("nats-server rejects the authorization: %v\n%s", err, conf)
	}
	want, err := NkeyUsers(keys)
	if err != nil {
		t.Fatal(err)
	}
	if len(opts.Nkeys) != len(want) || len(want) != len(Identities) {
		t.Fatalf("%d users in the file, %d expected (%d identities)", len(opts.Nkeys), len(want), len(Identities))
	}
	for i, u := range opts.Nkeys {
		if u.Nkey != want[i].Nkey || fmt.Sprint(*u.Permissions.Publish, *u.Permissions.Subscribe) !=
			fmt.Sprint(*want[i].Permissions.Publish, *want[i].Permissions.Subscribe) {
			t.Errorf("user %d: file %+v, embedded %+v", i, u.Permissions, want[i].Permissions)
		}
	}
	// Keys are kept: a second run changes nothing.
	before, _ := os.ReadFile(SeedFile(dir, StageApplier))
	if err := GenerateKeys(dir); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(SeedFile(dir, StageApplier)); string(after) != string(before) {
		t.Error("GenerateKeys replaced an existing seed")
	}
	if info, _ := os.Stat(SeedFile(dir, StageApplier)); info.Mode().Perm() != 0o600 {
		t.Errorf("seed mode %v, want 0600", info.Mode().Perm())
	}
}
