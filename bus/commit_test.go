package bus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"
)

// putRaw stores one message of stage's table as a writer in the middle of
// a generation would: a put without its commit yet.
func putRaw(ctx context.Context, t *testing.T, conn *Conn, stage, key string, data []byte, gen uint64) {
	t.Helper()
	msg := &nats.Msg{Subject: StageSubject(stage) + "." + key, Data: data, Header: Meta{Generation: gen, Stage: stage}.Header()}
	if _, err := conn.JS.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
}

// TestFollowWaitsForTheCommit: a follower that starts while a generation
// is half published (its puts stored, its commit not yet) hands on nothing
// of it, however long the commit takes, nor the generation before it,
// which the stream no longer holds whole; once the commit comes, the whole
// generation arrives in one snapshot.
func TestFollowWaitsForTheCommit(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	w := NewWriter(conn, StageRenderer)
	if _, err := w.Publish(ctx, Meta{Generation: 1}, map[string][]byte{"file.a": []byte("1"), "file.b": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	// Generation 2 changes a and adds c; its commit is still to come.
	putRaw(ctx, t, conn, StageRenderer, "file.a", []byte("2"), 2)
	putRaw(ctx, t, conn, StageRenderer, "file.c", []byte("2"), 2)

	snaps := make(chan Snapshot, 10)
	go func() {
		_ = Follow(ctx, conn, StageRenderer, func(_ context.Context, s Snapshot) error {
			snaps <- s
			return nil
		})
	}()
	select {
	case s := <-snaps:
		t.Fatalf("a snapshot before generation 2's commit: generation %d, puts %q", s.Meta.Generation, s.Puts)
	case <-time.After(500 * time.Millisecond): // far more than Follow's 20 ms flush
	}

	commit, _ := json.Marshal(Commit{Generation: 2, Keys: 3})
	putRaw(ctx, t, conn, StageRenderer, CommitToken, commit, 2)
	s := next(t, snaps)
	if !s.Full || s.Meta.Generation != 2 || !equalPuts(s.Puts, "file.a", "2", "file.b", "1", "file.c", "2") {
		t.Fatalf("snapshot at generation 2's commit: full %v, generation %d, puts %q", s.Full, s.Meta.Generation, s.Puts)
	}
}

// TestLostStreamGetsTheWholeTable: the writer's stream is deleted and
// created again empty (as a reader's EnsureStream does), then emptied by a
// purge. Each time the writer's next whole output goes out key by key,
// although every value equals what it published before; an output of
// changes only is refused (ErrTableLost), since it would make a table that
// looks whole and is not. A follower that was following gets a Full
// snapshot of the new stream with every key.
func TestLostStreamGetsTheWholeTable(t *testing.T) {
	checkStallsEvery(t, 100*time.Millisecond)
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := NewWriter(conn, StageRenderer)
	table := map[string][]byte{"file.nginx-conf": []byte("main"), "backend.a": []byte("a"), "backend.b": []byte("b")}
	if _, err := w.Publish(ctx, Meta{Generation: 1}, table); err != nil {
		t.Fatal(err)
	}
	snaps := make(chan Snapshot, 10)
	go func() {
		_ = Follow(ctx, conn, StageRenderer, func(_ context.Context, s Snapshot) error {
			snaps <- s
			return nil
		})
	}()
	if s := next(t, snaps); !s.Full || len(s.Puts) != 3 {
		t.Fatalf("first snapshot: full %v, puts %q", s.Full, s.Puts)
	}
	table["backend.a"] = []byte("a2")
	if _, err := w.Publish(ctx, Meta{Generation: 2}, table); err != nil {
		t.Fatal(err)
	}
	if s := next(t, snaps); s.Full || !equalPuts(s.Puts, "backend.a", "a2") {
		t.Fatalf("second snapshot: full %v, puts %q", s.Full, s.Puts)
	}

	if err := conn.JS.DeleteStream(ctx, StreamName(StageRenderer)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.EnsureStream(ctx, StageRenderer); err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 5*time.Second)
	n, err := w.PublishDelta(short, Meta{Generation: 3}, map[string][]byte{"backend.b": []byte("b3")}, nil)
	cancelShort()
	if !errors.Is(err, ErrTableLost) || n != 0 {
		t.Fatalf("changes only on a lost table: %d changed, %v; want ErrTableLost", n, err)
	}
	table["backend.b"] = []byte("b3")
	if n, err := w.Publish(ctx, Meta{Generation: 3}, table); err != nil || n != len(table) {
		t.Fatalf("whole table after the stream came back empty: %d of %d keys sent, %v", n, len(table), err)
	}
	s := next(t, snaps)
	if !s.Full || s.Meta.Generation != 3 || !equalPuts(s.Puts, "file.nginx-conf", "main", "backend.a", "a2", "backend.b", "b3") {
		t.Fatalf("after the stream came back: full %v, generation %d, puts %q", s.Full, s.Meta.Generation, s.Puts)
	}

	stream, err := conn.JS.Stream(ctx, StreamName(StageRenderer))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := w.Publish(ctx, Meta{Generation: 4}, table); err != nil || n != len(table) {
		t.Fatalf("whole table after a purge: %d of %d keys sent, %v", n, len(table), err)
	}
	got, meta, err := ReadTable(ctx, conn, StageRenderer)
	if err != nil || meta.Generation != 4 || !maps.EqualFunc(got, table, bytes.Equal) {
		t.Fatalf("table after a purge: generation %d, %q, %v", meta.Generation, got, err)
	}
}

// TestPipeRepublishesALostTable: a stage whose output stream is deleted
// and created again follows its input again on its next change, so its
// incremental transform starts over and the whole table is published, not
// the one key that changed.
func TestPipeRepublishesALostTable(t *testing.T) {
	checkStallsEvery(t, 100*time.Millisecond)
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	go func() { _ = Pipe(ctx, conn, StageWatcher, StageTranslator, zap.NewNop(), incremental) }()
	states := followState(ctx, conn, StageTranslator)
	w := NewWriter(conn, StageWatcher)
	if _, err := w.Publish(ctx, Meta{Generation: 1}, map[string][]byte{"object.a": []byte("1"), "object.b": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	waitState(t, states, map[string]string{"object.a": "1", "object.b": "1"})

	if err := conn.JS.DeleteStream(ctx, StreamName(StageTranslator)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.EnsureStream(ctx, StageTranslator); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PublishDelta(ctx, Meta{Generation: 2}, map[string][]byte{"object.b": []byte("2")}, nil); err != nil {
		t.Fatal(err)
	}
	waitState(t, states, map[string]string{"object.a": "1", "object.b": "2"})
	got, meta, err := ReadTable(ctx, conn, StageTranslator)
	if err != nil || meta.Generation != 2 || len(got) != 2 {
		t.Fatalf("translator's table: generation %d, %q, %v", meta.Generation, got, err)
	}
}
