package bus

import (
	"context"
	"testing"
	"time"
)

func startBus(t *testing.T) *Conn {
	t.Helper()
	e, err := StartEmbedded(EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	c, err := e.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestTableFollow publishes generations through a real embedded NATS and
// checks what a follower sees: whole states, explicit deletes, unchanged
// values not resent, metadata carried.
func TestTableFollow(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := NewWriter(conn, StageWatcher)
	trace := NewTrace()
	meta := func(gen uint64) Meta { return Meta{Generation: gen, Trace: trace, Ingest: time.Unix(0, 42)} }

	if n, err := w.Publish(ctx, meta(1), map[string][]byte{"object.a": []byte("1"), "object.b": []byte("2")}); err != nil || n != 2 {
		t.Fatalf("publish 1: %d %v", n, err)
	}
	snaps := make(chan Snapshot, 10)
	go func() {
		_ = Follow(ctx, conn, StageWatcher, func(_ context.Context, s Snapshot) error {
			entries := map[string][]byte{}
			for k, v := range s.Entries {
				entries[k] = v
			}
			changed := map[string]bool{}
			for k := range s.Changed {
				changed[k] = true
			}
			if s.Changed == nil {
				changed = nil
			}
			snaps <- Snapshot{Meta: s.Meta, Entries: entries, Changed: changed}
			return nil
		})
	}()
	first := next(t, snaps)
	if first.Meta.Generation != 1 || len(first.Entries) != 2 || first.Changed != nil {
		t.Fatalf("first snapshot: %+v", first)
	}
	if first.Meta.Trace.TraceID != trace.TraceID || first.Meta.Stage != StageWatcher || first.Meta.Ingest.UnixNano() != 42 {
		t.Fatalf("metadata not carried: %+v", first.Meta)
	}

	// b unchanged, a changed, c new; then a deleted.
	if n, err := w.Publish(ctx, meta(2), map[string][]byte{"object.a": []byte("10"), "object.b": []byte("2"), "object.c": []byte("3")}); err != nil || n != 2 {
		t.Fatalf("publish 2: %d %v", n, err)
	}
	second := next(t, snaps)
	if string(second.Entries["object.a"]) != "10" || len(second.Entries) != 3 || second.Changed["object.b"] || !second.Changed["object.c"] {
		t.Fatalf("second snapshot: %+v", second)
	}
	if n, err := w.Publish(ctx, meta(3), map[string][]byte{"object.b": []byte("2"), "object.c": []byte("3")}); err != nil || n != 1 {
		t.Fatalf("publish 3: %d %v", n, err)
	}
	third := next(t, snaps)
	if _, ok := third.Entries["object.a"]; ok || !third.Changed["object.a"] || third.Meta.Generation != 3 {
		t.Fatalf("third snapshot: %+v", third)
	}

	// Nothing changed: nothing is sent.
	if n, err := w.Publish(ctx, meta(4), map[string][]byte{"object.b": []byte("2"), "object.c": []byte("3")}); err != nil || n != 0 {
		t.Fatalf("publish 4: %d %v", n, err)
	}
	select {
	case s := <-snaps:
		t.Fatalf("an unchanged state was republished: %+v", s)
	case <-time.After(200 * time.Millisecond):
	}

	// A restarted producer reads the table back and deletes what is gone.
	restarted := NewWriter(conn, StageWatcher)
	if gen, err := restarted.Load(ctx); err != nil || gen != 3 {
		t.Fatalf("Load: %d %v", gen, err)
	}
	if n, err := restarted.Publish(ctx, meta(5), map[string][]byte{"object.c": []byte("3")}); err != nil || n != 1 {
		t.Fatalf("publish after restart: %d %v", n, err)
	}
	if fifth := next(t, snaps); len(fifth.Entries) != 1 || fifth.Meta.Generation != 5 {
		t.Fatalf("after restart: %+v", fifth)
	}

	// A late follower catches up from the stream alone.
	entries, m, err := ReadTable(ctx, conn, StageWatcher)
	if err != nil || len(entries) != 1 || string(entries["object.c"]) != "3" || m.Generation != 5 {
		t.Fatalf("ReadTable: %v %d %v", entries, m.Generation, err)
	}
}

func TestPublishRefusesOversizedValue(t *testing.T) {
	conn := startBus(t)
	w := NewWriter(conn, StageRenderer)
	_, err := w.Publish(context.Background(), Meta{Generation: 1}, map[string][]byte{"file.big": make([]byte, MaxPayload)})
	if err == nil {
		t.Fatal("a value over the bus limit was accepted")
	}
}

func next(t *testing.T, c <-chan Snapshot) Snapshot {
	t.Helper()
	select {
	case s := <-c:
		return s
	case <-time.After(10 * time.Second):
		t.Fatal("no snapshot")
		return Snapshot{}
	}
}
