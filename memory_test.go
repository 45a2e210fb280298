package main

import (
	"context"
	"math"
	"testing"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/bustest"
	"switchyard.dev/switchyard/integration/harness"
)

func TestParseMemoryLimit(t *testing.T) {
	good := map[string]int64{
		"240MiB": 240 << 20, "1GiB": 1 << 30, "512KiB": 512 << 10, "1TiB": 1 << 40,
		"1000B": 1000, "268435456": 268435456, "off": math.MaxInt64,
	}
	for in, want := range good {
		if got, err := parseMemoryLimit(in); err != nil || got != want {
			t.Errorf("parseMemoryLimit(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "MiB", "-1MiB", "0", "240MB", "1.5GiB", "9000000TiB", "240 MiB"} {
		if got, err := parseMemoryLimit(in); err == nil {
			t.Errorf("parseMemoryLimit(%q) = %d, want an error", in, got)
		}
	}
	if _, err := parseMemoryLimit(defaultMemoryLimit); err != nil {
		t.Errorf("the default does not parse: %v", err)
	}
}

// TestLimitFor: the limit is the configured one while the live heap leaves
// headroom under it, and follows the heap up otherwise (a quarter of it,
// at least 32 MiB); off stays off.
func TestLimitFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ floor, live, want int64 }{
		{220 * mib, 50 * mib, 220 * mib},
		{220 * mib, 176 * mib, 220 * mib},   // 176 + 44 = 220
		{220 * mib, 190 * mib, 237.5 * mib}, // a quarter of 190
		{220 * mib, 400 * mib, 500 * mib},
		{64 * mib, 40 * mib, 72 * mib}, // at least 32 MiB
		{math.MaxInt64, 400 * mib, math.MaxInt64},
	} {
		if got := limitFor(c.floor, c.live); got != c.want {
			t.Errorf("limitFor(%d MiB, %d MiB) = %.1f MiB, want %.1f MiB", c.floor/mib, c.live/mib, float64(got)/mib, float64(c.want)/mib)
		}
	}
}

// TestReleaseMemoryAfterStartupIsNoSlowConsumer: a burst of apply results
// (start-up at 10,000 Ingresses sends them back to back) ends the wait
// without the client dropping messages, which it reports as a "slow
// consumer" warning in the controller's log.
func TestReleaseMemoryAfterStartupIsNoSlowConsumer(t *testing.T) {
	conn := harness.Bus(t, "test")
	slow := bustest.SlowConsumers(conn.NC)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		releaseMemoryAfterStartup(ctx, conn, zap.NewNop())
	}()
	for waiting := true; waiting; {
		for range 200 {
			if err := conn.NC.Publish(bus.ApplyResultSubject, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
		if err := conn.NC.Flush(); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
			waiting = false
		case <-ctx.Done():
			t.Fatal("the first apply result never ended the wait")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if n := slow.Load(); n > 0 {
		t.Errorf("the client dropped apply results %d times (slow consumer) while waiting for the first one", n)
	}
}
