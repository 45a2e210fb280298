package bus

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
