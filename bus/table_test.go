package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
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
// checks what a follower sees: the whole table first, then only the keys
// put and deleted, unchanged values not resent, metadata carried.
func TestTableFollow(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := NewWriter(conn, StageWatcher)
	trace := NewTrace()
	meta := func(gen uint64) Meta { return Meta{Generation: gen, Trace: trace, Ingest: time.Unix(0, 42)} }

	if n, err := w.Publish(ctx, meta(1), map[string][]byte{"object.a": []byte("1"), "object.b": []byte("2"), "object.gone": []byte("x")}); err != nil || n != 3 {
		t.Fatalf("publish 1: %d %v", n, err)
	}
	// Deleted before anyone follows: the first snapshot never mentions it.
	if n, err := w.PublishDelta(ctx, meta(2), nil, []string{"object.gone"}); err != nil || n != 1 {
		t.Fatalf("publish 2: %d %v", n, err)
	}
	snaps := make(chan Snapshot, 10)
	go func() {
		_ = Follow(ctx, conn, StageWatcher, func(_ context.Context, s Snapshot) error {
			snaps <- s // the snapshot's maps belong to the follower
			return nil
		})
	}()
	first := next(t, snaps)
	if !first.Full || first.Meta.Generation != 2 || !equalPuts(first.Puts, "object.a", "1", "object.b", "2") || len(first.Deletes) != 0 {
		t.Fatalf("first snapshot: %+v", first)
	}
	if first.Meta.Trace.TraceID != trace.TraceID || first.Meta.Stage != StageWatcher || first.Meta.Ingest.UnixNano() != 42 {
		t.Fatalf("metadata not carried: %+v", first.Meta)
	}

	// b unchanged, a changed, c new: only a and c arrive.
	if n, err := w.Publish(ctx, meta(3), map[string][]byte{"object.a": []byte("10"), "object.b": []byte("2"), "object.c": []byte("3")}); err != nil || n != 2 {
		t.Fatalf("publish 3: %d %v", n, err)
	}
	second := next(t, snaps)
	if second.Full || !equalPuts(second.Puts, "object.a", "10", "object.c", "3") || len(second.Deletes) != 0 {
		t.Fatalf("second snapshot: %+v", second)
	}
	// a deleted: only its key arrives.
	if n, err := w.Publish(ctx, meta(4), map[string][]byte{"object.b": []byte("2"), "object.c": []byte("3")}); err != nil || n != 1 {
		t.Fatalf("publish 4: %d %v", n, err)
	}
	third := next(t, snaps)
	if third.Full || len(third.Puts) != 0 || !slices.Equal(third.Deletes, []string{"object.a"}) || third.Meta.Generation != 4 {
		t.Fatalf("third snapshot: %+v", third)
	}

	// Nothing changed: nothing is sent.
	if n, err := w.Publish(ctx, meta(5), map[string][]byte{"object.b": []byte("2"), "object.c": []byte("3")}); err != nil || n != 0 {
		t.Fatalf("publish 5: %d %v", n, err)
	}
	select {
	case s := <-snaps:
		t.Fatalf("an unchanged state was republished: %+v", s)
	case <-time.After(200 * time.Millisecond):
	}

	// A restarted producer reads the table back and deletes what is gone.
	restarted := NewWriter(conn, StageWatcher)
	if gen, err := restarted.Load(ctx); err != nil || gen != 4 {
		t.Fatalf("Load: %d %v", gen, err)
	}
	if n, err := restarted.Publish(ctx, meta(6), map[string][]byte{"object.c": []byte("3")}); err != nil || n != 1 {
		t.Fatalf("publish after restart: %d %v", n, err)
	}
	if fifth := next(t, snaps); len(fifth.Puts) != 0 || !slices.Equal(fifth.Deletes, []string{"object.b"}) || fifth.Meta.Generation != 6 {
		t.Fatalf("after restart: %+v", fifth)
	}

	// A late follower catches up from the stream alone.
	entries, m, err := ReadTable(ctx, conn, StageWatcher)
	if err != nil || len(entries) != 1 || string(entries["object.c"]) != "3" || m.Generation != 6 {
		t.Fatalf("ReadTable: %v %d %v", entries, m.Generation, err)
	}
}

// TestFollowFoldsChanges checks the changes collected between two
// snapshots: the last value of a key put twice, a key put then deleted
// reported as deleted, a key deleted then put again reported as put.
func TestFollowFoldsChanges(t *testing.T) {
	c := newTableChanges()
	for _, m := range []tableMsg{
		{key: "a", data: []byte("1")}, {key: "a", data: []byte("2")},
		{key: "b", data: []byte("1")}, {key: "b", deleted: true},
		{key: "c", deleted: true}, {key: "c", data: []byte("3")},
	} {
		c.add(m, false)
	}
	snap := c.snapshot(Meta{Generation: 7}, false)
	if !equalPuts(snap.Puts, "a", "2", "c", "3") || !slices.Equal(snap.Deletes, []string{"b"}) || snap.Full || snap.Meta.Generation != 7 {
		t.Fatalf("folded changes: %+v", snap)
	}
	initial := newTableChanges()
	initial.add(tableMsg{key: "a", data: []byte("1")}, true)
	initial.add(tableMsg{key: "b", deleted: true}, true)
	if snap := initial.snapshot(Meta{}, true); !snap.Full || !equalPuts(snap.Puts, "a", "1") || len(snap.Deletes) != 0 {
		t.Fatalf("first snapshot reports a delete: %+v", snap)
	}
}

// equalPuts says whether puts holds exactly the given key, value pairs.
func equalPuts(puts map[string][]byte, kv ...string) bool {
	want := map[string][]byte{}
	for i := 0; i+1 < len(kv); i += 2 {
		want[kv[i]] = []byte(kv[i+1])
	}
	return maps.EqualFunc(puts, want, bytes.Equal)
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

// TestPublishLargeTable publishes a table far larger than the client's
// limit of outstanding async publishes in one generation, as the first
// publish of every stage does at scale, and reads it back whole.
func TestPublishLargeTable(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	entries := map[string][]byte{}
	for i := range 10_000 {
		entries[Key(KindBackend, fmt.Sprintf("b-%d", i))] = []byte(fmt.Sprintf(`{"name":"b-%d"}`, i))
	}
	w := NewWriter(conn, StageTranslator)
	if n, err := w.Publish(ctx, Meta{Generation: 1}, entries); err != nil || n != len(entries) {
		t.Fatalf("publish: %d %v", n, err)
	}
	got, meta, err := ReadTable(ctx, conn, StageTranslator)
	if err != nil || meta.Generation != 1 || !maps.EqualFunc(got, entries, bytes.Equal) {
		t.Fatalf("read back %d of %d entries, generation %d: %v", len(got), len(entries), meta.Generation, err)
	}
}

// TestApplyEncodesValues publishes values the writer encodes itself, mixed
// with encoded puts: a whole-table output deletes what it no longer holds,
// and an unchanged value is not resent.
func TestApplyEncodesValues(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := NewWriter(conn, StageRenderer)
	first := Output{Full: true,
		Puts:   map[string][]byte{"file.a": []byte(`{"path":"a"}`)},
		Values: map[string]any{"backend.b": &Backend{Name: "b"}, "backend.gone": &Backend{Name: "gone"}},
	}
	if n, err := w.Apply(ctx, Meta{Generation: 1}, first); err != nil || n != 3 {
		t.Fatalf("first apply: %d %v", n, err)
	}
	second := Output{Full: true, Values: map[string]any{"file.a": RenderedFile{Path: "a"}, "backend.b": &Backend{Name: "b"}}}
	if n, err := w.Apply(ctx, Meta{Generation: 2}, second); err != nil || n != 2 {
		t.Fatalf("second apply: %d changed (want file.a re-encoded and backend.gone deleted), %v", n, err)
	}
	got, _, err := ReadTable(ctx, conn, StageRenderer)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]byte{}
	for key, v := range second.Values {
		if want[key], err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	if !maps.EqualFunc(got, want, bytes.Equal) {
		t.Fatalf("table %q, want %q", got, want)
	}
}

// TestEmptyFirstPublishAfterLoadCommits: a writer that read its table
// first (the watcher does, for its generation) still commits its first
// set when that set is empty, so followers start: check on an empty
// manifests directory waited out its whole timeout before.
func TestEmptyFirstPublishAfterLoadCommits(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := NewWriter(conn, StageWatcher)
	if _, err := w.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Publish(ctx, Meta{Generation: 1, Trace: NewTrace()}, map[string][]byte{}); err != nil {
		t.Fatal(err)
	}
	snaps := make(chan Snapshot, 10)
	go func() {
		_ = Follow(ctx, conn, StageWatcher, func(_ context.Context, s Snapshot) error {
			snaps <- s
			return nil
		})
	}()
	if first := next(t, snaps); !first.Full || len(first.Puts) != 0 || first.Meta.Generation != 1 {
		t.Fatalf("first snapshot: %+v", first)
	}
	// Later unchanged sets still send nothing.
	if n, err := w.Publish(ctx, Meta{Generation: 2, Trace: NewTrace()}, map[string][]byte{}); err != nil || n != 0 {
		t.Fatalf("publish 2: %d %v", n, err)
	}
	select {
	case s := <-snaps:
		t.Fatalf("an unchanged state was republished: %+v", s)
	case <-time.After(200 * time.Millisecond):
	}
}
