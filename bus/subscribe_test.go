package bus

import (
	"context"
	"strconv"
	"testing"
	"time"

	"switchyard.dev/switchyard/bus/bustest"
)

// TestSubscribeAllDropsNothing: a burst far larger than the channel,
// published while nobody reads, arrives whole and in order once the
// reader catches up, and the client reports no slow consumer.
func TestSubscribeAllDropsNothing(t *testing.T) {
	conn := startBus(t)
	slow := bustest.SlowConsumers(conn.NC)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, sub, err := conn.SubscribeAll(ctx, "test.burst")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	const n = 5000
	for i := range n {
		if err := conn.NC.Publish("test.burst", []byte(strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := conn.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // the client has queued what the channel cannot hold
	for i := range n {
		select {
		case m := <-msgs:
			if string(m.Data) != strconv.Itoa(i) {
				t.Fatalf("message %d is %q", i, m.Data)
			}
		case <-ctx.Done():
			t.Fatalf("only %d of %d messages arrived", i, n)
		}
	}
	if s := slow.Load(); s > 0 {
		t.Errorf("the client dropped messages %d times (slow consumer)", s)
	}
}
