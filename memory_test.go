package main

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
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
// at least 32 MiB, and at start-up as much as is live where the container
// has room); off stays off.
func TestLimitFor(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct{ floor, live, overhead, share, want int64 }{
		{220 * mib, 50 * mib, 0, headroomShare, 220 * mib},
		{220 * mib, 176 * mib, 0, headroomShare, 220 * mib},   // 176 + 44 = 220
		{220 * mib, 190 * mib, 0, headroomShare, 237.5 * mib}, // a quarter of 190
		{220 * mib, 190 * mib, 30 * mib, headroomShare, 267.5 * mib},
		{220 * mib, 400 * mib, 0, headroomShare, 500 * mib},
		{64 * mib, 40 * mib, 0, headroomShare, 72 * mib}, // at least 32 MiB
		{math.MaxInt64, 400 * mib, 0, headroomShare, math.MaxInt64},
	} {
		if got := limitFor(c.floor, c.live, c.overhead, c.share); got != c.want {
			t.Errorf("limitFor(%d MiB, %d MiB, %d MiB, 1/%d) = %.1f MiB, want %.1f MiB", c.floor/mib, c.live/mib, c.overhead/mib, c.share,
				float64(got)/mib, float64(c.want)/mib)
		}
	}
	// At start-up: as much headroom as is live, up to the ceiling (half a
	// container's limit), never less than the steady headroom.
	const none = math.MaxInt64
	for _, c := range []struct{ floor, live, overhead, ceiling, want int64 }{
		{220 * mib, 50 * mib, 0, none, 220 * mib},
		{220 * mib, 400 * mib, 0, none, 800 * mib},
		{220 * mib, 400 * mib, 40 * mib, none, 840 * mib},
		{220 * mib, 400 * mib, 0, 600 * mib, 600 * mib},
		{220 * mib, 400 * mib, 0, 300 * mib, 500 * mib}, // the steady limit
		{none, 400 * mib, 0, 600 * mib, none},
	} {
		if got := startupLimitFor(c.floor, c.live, c.overhead, c.ceiling); got != c.want {
			t.Errorf("startupLimitFor(%d MiB, %d MiB, %d MiB, %d MiB) = %.1f MiB, want %.1f MiB", c.floor/mib, c.live/mib, c.overhead/mib,
				c.ceiling/mib, float64(got)/mib, float64(c.want)/mib)
		}
	}
}

// TestHeapUse: this runtime has the metrics keepHeadroom reads, and its
// overhead is some of its memory, not none and not all of it.
func TestHeapUse(t *testing.T) {
	runtime.GC() // the live heap is measured by a collection
	live, overhead, ok := heapUse(newHeapSamples())
	if !ok {
		t.Fatal("a metric keepHeadroom reads is missing")
	}
	if live <= 0 || overhead <= 0 || overhead > 1<<30 {
		t.Errorf("live %d bytes, overhead %d bytes", live, overhead)
	}
}

func TestParseCgroupLimit(t *testing.T) {
	for in, want := range map[string]int64{
		"536870912\n": 512 << 20, "max\n": 0, "9223372036854771712\n": 0, "": 0, "-1": 0, "lots": 0,
	} {
		if got := parseCgroupLimit(in); got != want {
			t.Errorf("parseCgroupLimit(%q) = %d, want %d", in, got, want)
		}
	}
}

// TestReleaseMemoryIsNoSlowConsumer: bursts of apply results (start-up
// at 10,000 Ingresses sends them back to back) never make the client drop
// messages, which it reports as a "slow consumer" warning in the
// controller's log.
func TestReleaseMemoryIsNoSlowConsumer(t *testing.T) {
	conn := harness.Bus(t, "test")
	slow := bustest.SlowConsumers(conn.NC)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done, started := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		releaseMemory(ctx, conn, started, zap.NewNop())
	}()
	for range 50 {
		for range 200 {
			if err := conn.NC.Publish(bus.ApplyResultSubject, []byte("{}")); err != nil {
				t.Fatal(err)
			}
		}
		if err := conn.NC.Flush(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("releaseMemory did not return when its context ended")
	}
	if n := slow.Load(); n > 0 {
		t.Errorf("the client dropped apply results %d times (slow consumer)", n)
	}
}

// TestReleaseAfterStartup: the start-up headroom ends at the first release
// after the first apply (a quiet period), or, when applies never stop, once
// the start-up period has passed; never before either.
func TestReleaseAfterStartup(t *testing.T) {
	const quiet, startup = 200 * time.Millisecond, time.Second
	run := func(t *testing.T, applies time.Duration) {
		applied, started := make(chan struct{}), make(chan struct{})
		var released atomic.Int32
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go releaseAfterStartup(ctx, applied, started, quiet, startup, func() { released.Add(1) })
		first := time.Now()
		applied <- struct{}{}
		endedWhileBusy := false
		for time.Since(first) < applies {
			select {
			case <-started:
				// Only a release (the machine stalled for a quiet
				// period) may end it before the start-up period.
				if time.Since(first) < startup && released.Load() == 0 {
					t.Fatalf("start-up headroom ended %s after the first apply, without a release", time.Since(first))
				}
				endedWhileBusy = true
			default:
			}
			select {
			case applied <- struct{}{}:
			case <-time.After(quiet / 4):
			}
			time.Sleep(quiet / 4)
		}
		select {
		case <-started:
		case <-time.After(10 * time.Second):
			t.Fatalf("start-up headroom never ended (%d releases)", released.Load())
		}
		if applies > 0 && !endedWhileBusy {
			t.Errorf("start-up headroom lasted while applies went on for %s (start-up period %s)", applies, startup)
		}
		if applies == 0 && released.Load() == 0 {
			// Ended by the quiet release, which comes with it.
			for deadline := time.Now().Add(10 * time.Second); released.Load() == 0; time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatal("ended without the release")
				}
			}
		}
	}
	t.Run("quiet after the first apply", func(t *testing.T) { run(t, 0) })
	t.Run("applies never stop", func(t *testing.T) { run(t, 3*startup) })
}

// TestReleaseWhenQuiet: memory is released after a quiet period that
// follows the last apply, and never twice without an apply in between.
// On a stalled machine a burst may be split in two; the rules still hold.
func TestReleaseWhenQuiet(t *testing.T) {
	const quiet = 200 * time.Millisecond
	applied := make(chan struct{})
	var mu sync.Mutex
	var events []string // "apply" and "release", in order
	var last time.Time  // of the last apply
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go releaseWhenQuiet(ctx, applied, quiet, func() {
		mu.Lock()
		defer mu.Unlock()
		if len(events) > 0 && time.Since(last) < quiet {
			t.Errorf("released %s after the last apply, before the quiet period of %s", time.Since(last), quiet)
		}
		events = append(events, "release")
	})
	apply := func() {
		applied <- struct{}{}
		mu.Lock()
		defer mu.Unlock()
		last = time.Now()
		events = append(events, "apply")
	}
	releases := func() int {
		mu.Lock()
		defer mu.Unlock()
		return strings.Count(strings.Join(events, " "), "release")
	}
	waitReleases := func(n int) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); releases() < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%d releases, want %d: %v", releases(), n, events)
			}
		}
	}

	// The first quiet period counts from the start.
	waitReleases(1)
	time.Sleep(3 * quiet)
	for range 5 {
		apply()
		time.Sleep(quiet / 4)
	}
	waitReleases(2)
	time.Sleep(3 * quiet)
	before := releases()
	apply()
	waitReleases(before + 1)
	time.Sleep(3 * quiet)
	cancel()

	mu.Lock()
	defer mu.Unlock()
	if got := strings.Join(events, " "); strings.Contains(got, "release release") {
		t.Errorf("released twice without an apply in between: %s", got)
	}
}

// TestAllocationBursts: a period in which the process allocated at least
// the burst is signalled, allocations that add up to less are not, and the
// signal never blocks the sampler (nobody reads it for a while).
func TestAllocationBursts(t *testing.T) {
	var allocated, seen atomic.Uint64
	var reads atomic.Int64
	read := func() uint64 {
		v := allocated.Load()
		seen.Store(v)
		reads.Add(1)
		return v
	}
	bursts := make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const every, burst = 5 * time.Millisecond, 1000
	go allocationBursts(ctx, every, burst, read, bursts)

	// Less than a burst in all, whatever the sampler's pace: no signal.
	small := func() {
		for range 40 {
			allocated.Add(burst / 100)
			time.Sleep(every)
		}
		select {
		case <-bursts:
			t.Fatal("allocations below the burst were signalled")
		default:
		}
	}
	small()

	// Several bursts nobody reads: the sampler goes on.
	for range 3 {
		allocated.Add(10 * burst)
		time.Sleep(4 * every)
	}
	allocated.Add(10 * burst)
	select {
	case <-bursts:
	case <-time.After(10 * time.Second):
		t.Fatal("a burst was not signalled")
	}
	allocated.Add(10 * burst)
	select {
	case <-bursts:
	case <-time.After(10 * time.Second):
		t.Fatal("the sampler stopped after a signal nobody read")
	}

	// After the bursts, a period counts from where the last one ended:
	// once the sampler has read the last burst and gone round once more
	// (so its signal was sent), and the signal is taken.
	for seen.Load() != allocated.Load() {
		time.Sleep(every)
	}
	for after := reads.Load(); reads.Load() < after+2; {
		time.Sleep(every)
	}
	select {
	case <-bursts:
	default:
	}
	small()
}

// TestHeapAllocated: the runtime's count grows with what is allocated.
func TestHeapAllocated(t *testing.T) {
	before := heapAllocated()
	sink = make([]byte, 8<<20)
	if got := heapAllocated() - before; got < 8<<20 {
		t.Fatalf("heapAllocated grew by %d after an 8 MiB allocation", got)
	}
}

var sink []byte
