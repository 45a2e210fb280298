package bus

import (
	"context"
	"testing"
	"time"
)

// TestFollowerReplacesAStalledConsumer: a consumer that stays connected
// and keeps sending heartbeats but delivers nothing (here paused on the
// server, as a consumer left on a stream whose leadership moved can be)
// is replaced once the stream is seen ahead of the follower twice, and
// the follower goes on from the message after the last it delivered.
func TestFollowerReplacesAStalledConsumer(t *testing.T) {
	checkStallsEvery(t, 200*time.Millisecond)
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	w := NewWriter(conn, StageWatcher)
	if _, err := w.Publish(ctx, Meta{Generation: 1}, map[string][]byte{"object.a": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	states := followState(ctx, conn, StageWatcher)
	waitState(t, states, map[string]string{"object.a": "1"})

	stream, err := conn.JS.Stream(ctx, StreamName(StageWatcher))
	if err != nil {
		t.Fatal(err)
	}
	paused := 0
	for name := range stream.ConsumerNames(ctx).Name() {
		if _, err := conn.JS.PauseConsumer(ctx, StreamName(StageWatcher), name, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		paused++
	}
	if paused != 1 {
		t.Fatalf("paused %d consumers, want the follower's one", paused)
	}
	if _, err := w.PublishDelta(ctx, Meta{Generation: 2}, map[string][]byte{"object.b": []byte("2")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PublishDelta(ctx, Meta{Generation: 3}, map[string][]byte{"object.a": []byte("11")}, nil); err != nil {
		t.Fatal(err)
	}
	waitState(t, states, map[string]string{"object.a": "11", "object.b": "2"})
}

// checkStallsEvery makes followers check for a stalled consumer every d
// for the rest of the test.
func checkStallsEvery(t *testing.T, d time.Duration) {
	old := stallCheck
	stallCheck = d
	t.Cleanup(func() { stallCheck = old })
}
