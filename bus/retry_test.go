package bus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus/bustest"
)

func startTCPBus(t *testing.T) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		JetStream: true, StoreDir: t.TempDir(), Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, MaxPayload: MaxPayload,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats not ready")
	}
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return strings.TrimPrefix(ns.ClientURL(), "nats://")
}

func connect(t *testing.T, url, name string) *Conn {
	t.Helper()
	c, err := Connect(url, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// followState follows stage's table and sends a copy of the whole table
// after every snapshot.
func followState(ctx context.Context, conn *Conn, stage string) <-chan map[string]string {
	states := make(chan map[string]string, 100)
	go func() {
		state := map[string]string{}
		_ = Follow(ctx, conn, stage, func(_ context.Context, s Snapshot) error {
			if s.Full {
				clear(state)
			}
			for _, k := range s.Deletes {
				delete(state, k)
			}
			for k, v := range s.Puts {
				state[k] = string(v)
			}
			cp := make(map[string]string, len(state))
			for k, v := range state {
				cp[k] = v
			}
			states <- cp
			return nil
		})
	}()
	return states
}

// waitState waits, generously, for a table equal to want.
func waitState(t *testing.T, states <-chan map[string]string, want map[string]string) {
	t.Helper()
	deadline := time.After(60 * time.Second)
	var last map[string]string
	for {
		select {
		case s := <-states:
			last = s
			if fmt.Sprint(s) == fmt.Sprint(want) {
				return
			}
		case <-deadline:
			t.Fatalf("table never became %v; last %v", want, last)
		}
	}
}

// incremental is a transform like the translator's: it returns only the
// keys that changed, so an output that is lost is never sent again.
func incremental(_ context.Context, in Snapshot) (Output, error) {
	return Output{Puts: in.Puts, Deletes: in.Deletes, Full: in.Full}, nil
}

func waitNotReady(t *testing.T, c *Conn) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if ok, _ := c.Ready(); !ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the connection still says ready with the bus away")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBusStallsAndRecovers takes the bus away from a stage at start and
// in the middle of a run: the stage waits, says it is not ready, and once
// the bus is back every change made meanwhile arrives.
func TestBusStallsAndRecovers(t *testing.T) {
	target := startTCPBus(t)
	direct := bustest.StartProxy(t, target, true)
	stalled := bustest.StartProxy(t, target, false) // the pipe's bus is away at start

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	producer := connect(t, direct.URL(), "producer")
	pipeConn := connect(t, stalled.URL(), "pipe")
	pipeDone := make(chan error, 1)
	go func() { pipeDone <- Pipe(ctx, pipeConn, StageWatcher, StageTranslator, zap.NewNop(), incremental) }()
	states := followState(ctx, connect(t, direct.URL(), "follower"), StageTranslator)

	w := NewWriter(producer, StageWatcher)
	if _, err := w.Publish(ctx, Meta{Generation: 1}, map[string][]byte{"object.a": []byte("1"), "object.b": []byte("2")}); err != nil {
		t.Fatal(err)
	}
	waitNotReady(t, pipeConn)
	stalled.SetUp(true)
	waitState(t, states, map[string]string{"object.a": "1", "object.b": "2"})

	// Mid-run: the pipe loses the bus while changes are made.
	stalled.SetUp(false)
	waitNotReady(t, pipeConn)
	if _, err := w.PublishDelta(ctx, Meta{Generation: 2}, map[string][]byte{"object.c": []byte("3")}, []string{"object.a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PublishDelta(ctx, Meta{Generation: 3}, map[string][]byte{"object.b": []byte("22")}, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	stalled.SetUp(true)
	waitState(t, states, map[string]string{"object.b": "22", "object.c": "3"})
	select {
	case err := <-pipeDone:
		t.Fatalf("the pipe ended while the bus was away: %v", err)
	default:
	}
}

// TestFailedPublishIsRetried makes the pipe's own publish fail after it
// took its input (the output stream refuses new messages): the output of
// an incremental transform must be published when the stream takes
// messages again, not dropped.
func TestFailedPublishIsRetried(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() { _ = Pipe(ctx, conn, StageWatcher, StageTranslator, zap.NewNop(), incremental) }()
	states := followState(ctx, conn, StageTranslator)
	w := NewWriter(conn, StageWatcher)
	if _, err := w.Publish(ctx, Meta{Generation: 1}, map[string][]byte{"object.a": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	waitState(t, states, map[string]string{"object.a": "1"})

	// Full: the next publish of the translator's table is refused.
	stream, err := conn.JS.Stream(ctx, StreamName(StageTranslator))
	if err != nil {
		t.Fatal(err)
	}
	cfg := stream.CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = int64(stream.CachedInfo().State.Msgs), jetstream.DiscardNew
	if _, err := conn.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PublishDelta(ctx, Meta{Generation: 2}, map[string][]byte{"object.b": []byte("2")}, nil); err != nil {
		t.Fatal(err)
	}
	waitState(t, states, map[string]string{"object.a": "1", "object.b": "2"})
}

// TestOversizedValueBlocksNothing publishes a batch with one value over
// the bus limit: the others are published and committed, and the error
// names the stage and the key.
func TestOversizedValueBlocksNothing(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := NewWriter(conn, StageRenderer)
	n, err := w.Publish(ctx, Meta{Generation: 1}, map[string][]byte{
		"file.a": []byte("a"), "file.big": make([]byte, MaxPayload), "file.z": []byte("z"),
	})
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "renderer file.big") || n != 2 {
		t.Fatalf("publish: %d changed, error %v; want 2 and file.big named as too large", n, err)
	}
	got, meta, err := ReadTable(ctx, conn, StageRenderer)
	if err != nil || meta.Generation != 1 || len(got) != 2 || string(got["file.a"]) != "a" || string(got["file.z"]) != "z" {
		t.Fatalf("table after the batch: %v generation %d %v", got, meta.Generation, err)
	}
}
