package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// defaultMemoryLimit is the Go runtime's soft memory limit when neither
// --memory-limit nor GOMEMLIMIT sets one. It is sized for the design target
// (the all-in-one under 300 MB resident at 10,000 Ingresses): the binary's
// own pages take about 50 MiB besides. Without a limit the heap grows to
// twice what is live before a collection, which at that scale is most of
// the budget spent on garbage. The limit is soft, and it follows the live
// heap up (keepHeadroom): a larger cluster costs memory, never an
// out-of-memory kill nor a collector that never stops.
const defaultMemoryLimit = "220MiB"

// A limit at or just above the live heap makes the collector run after
// every few allocations, each run scanning the whole heap: at 10,000
// Ingresses (about 190 MiB live) an endpoint change then cost two
// collections, most of its latency, and start-up took half again as long.
// So the limit keeps headroom above what is live: a quarter of it, at
// least minHeadroom, never less than what was configured.
//
// Start-up is the one burst where a quarter is not enough: every object
// is decoded, translated, rendered and published at once while the live
// heap grows to its steady size, and with a quarter of headroom the
// collector took half of start-up's CPU (20,000 Ingresses: 37 s to the
// last host, against 23 s without a limit). Until start-up is over the
// headroom is as large as the live heap, the collector's own default
// (GOGC=100), within half the container's memory limit when it has one;
// releaseMemory says when start-up is over, and returns the pages.
const (
	headroomShare        = 4
	startupHeadroomShare = 1
	minHeadroom          = 32 << 20
	headroomCheck        = time.Second
	// The heap grows fastest at start-up: checked more often then.
	startupHeadroomCheck = 200 * time.Millisecond
)

// limitFor is the memory limit for a live heap of live bytes under a
// configured limit floor, with 1/share of live as headroom, above the
// runtime's overhead: the limit counts all the memory the runtime holds,
// and what is not heap objects (half-empty spans, stacks, the collector's
// own metadata) was 15 % of the live heap at 10,000 Ingresses. Without it
// the headroom was gone, the heap goal sat on the live heap, and an idle
// controller collected without a pause, half a core for nothing.
func limitFor(floor, live, overhead, share int64) int64 {
	if floor == math.MaxInt64 {
		return floor // off
	}
	return max(floor, live+overhead+max(live/share, minHeadroom))
}

// startupLimitFor is limitFor with the start-up headroom where the
// container leaves room for it: not above ceiling, never below the steady
// limit. The start-up peak must not be what gets a controller killed for
// its memory over and over.
func startupLimitFor(floor, live, overhead, ceiling int64) int64 {
	steady := limitFor(floor, live, overhead, headroomShare)
	return max(steady, min(limitFor(floor, live, overhead, startupHeadroomShare), ceiling))
}

// heapSamples are the runtime metrics keepHeadroom reads: the live heap,
// and what the memory limit counts besides heap objects (all the memory
// held, less what was returned, the objects and the free pages, which the
// runtime returns itself when it nears the limit).
var heapSamples = []string{"/gc/heap/live:bytes", "/memory/classes/total:bytes", "/memory/classes/heap/released:bytes",
	"/memory/classes/heap/objects:bytes", "/memory/classes/heap/free:bytes"}

// newHeapSamples are the samples heapUse reads, in heapSamples' order.
func newHeapSamples() []metrics.Sample {
	sample := make([]metrics.Sample, len(heapSamples))
	for i, name := range heapSamples {
		sample[i].Name = name
	}
	return sample
}

// heapUse reads the live heap and the runtime's overhead; ok is false on a
// runtime without these metrics.
func heapUse(sample []metrics.Sample) (live, overhead int64, ok bool) {
	v, ok := readCounts(sample)
	if !ok {
		return 0, 0, false
	}
	return v[0], max(0, v[1]-v[2]-v[3]-v[4]), true
}

// readCounts reads sample's runtime metrics, all byte counts; ok is false
// when this runtime lacks one of them.
func readCounts(sample []metrics.Sample) (v []int64, ok bool) {
	metrics.Read(sample)
	v = make([]int64, len(sample))
	for i := range sample {
		if sample[i].Value.Kind() != metrics.KindUint64 {
			return nil, false
		}
		v[i] = int64(sample[i].Value.Uint64())
	}
	return v, true
}

// startupCeiling is the most the start-up headroom may take the limit to:
// half the memory limit of the container (NGINX runs beside the
// controller), or no bound outside one.
func startupCeiling() int64 {
	if limit := containerMemoryLimit(); limit > 0 {
		return limit / 2
	}
	return math.MaxInt64
}

// containerMemoryLimit is the memory limit of this process's cgroup
// (cgroup v2 memory.max; v1 memory.limit_in_bytes of its own cgroup, or
// of the mount's root inside a container), or 0 for none.
func containerMemoryLimit() int64 {
	paths := []string{"/sys/fs/cgroup/memory.max"}
	if own, err := os.ReadFile("/proc/self/cgroup"); err == nil {
		for _, line := range strings.Split(string(own), "\n") {
			if _, path, ok := strings.Cut(line, ":memory:"); ok {
				paths = append(paths, "/sys/fs/cgroup/memory"+path+"/memory.limit_in_bytes")
			}
		}
	}
	paths = append(paths, "/sys/fs/cgroup/memory/memory.limit_in_bytes")
	for _, path := range paths {
		if b, err := os.ReadFile(path); err == nil {
			return parseCgroupLimit(string(b))
		}
	}
	return 0
}

// parseCgroupLimit reads a cgroup memory limit file: bytes, or 0 for none
// ("max", or v1's page-rounded maximum).
func parseCgroupLimit(s string) int64 {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}

// keepHeadroom raises the runtime's memory limit above the configured one
// while the live heap needs it, and lowers it back when the heap shrinks.
// It checks periodically, after whatever collections ran meanwhile, with
// the start-up headroom until started is closed (a nil started: never).
func keepHeadroom(ctx context.Context, started <-chan struct{}, log *zap.Logger) {
	floor := debug.SetMemoryLimit(-1) // reads the limit without changing it
	sample := newHeapSamples()
	current := floor
	ceiling, every := startupCeiling(), startupHeadroomCheck
	if started == nil {
		every = headroomCheck
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-started:
			started = nil // a nil channel: never again
			t.Reset(headroomCheck)
		case <-t.C:
		}
		live, overhead, ok := heapUse(sample)
		if !ok {
			return // a runtime without the metrics: keep the configured limit
		}
		want := limitFor(floor, live, overhead, headroomShare)
		if started != nil {
			want = startupLimitFor(floor, live, overhead, ceiling)
		}
		// Small moves are not worth a change (nor a log line).
		if diff := want - current; diff == 0 || (want != floor && max(diff, -diff) < current/16) {
			continue
		}
		debug.SetMemoryLimit(want)
		if current == floor || want == floor {
			log.Info("memory limit follows the live heap", zap.Int64("configured_bytes", floor),
				zap.Int64("limit_bytes", want), zap.Int64("live_bytes", live), zap.Int64("overhead_bytes", overhead))
		}
		current = want
	}
}

// memoryUnits are the suffixes GOMEMLIMIT accepts, so one syntax serves both.
var memoryUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// parseMemoryLimit reads a size in GOMEMLIMIT's syntax ("240MiB", "1GiB",
// "268435456"), or "off" for no limit.
func parseMemoryLimit(s string) (int64, error) {
	if s == "off" {
		return math.MaxInt64, nil
	}
	digits, shift := s, uint(0)
	for _, u := range memoryUnits {
		if strings.HasSuffix(s, u.suffix) {
			digits, shift = strings.TrimSuffix(s, u.suffix), u.shift
			break
		}
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return 0, fmt.Errorf("memory limit %q: want a positive size such as 240MiB or 1GiB, or off", s)
	}
	return n << shift, nil
}

// setMemoryLimit applies --memory-limit; without it, GOMEMLIMIT (which the
// runtime has already read) is kept, and without that the default applies.
func (o *options) setMemoryLimit(log *zap.Logger) error {
	value, from := o.memoryLimit, "--memory-limit"
	if value == "" {
		if env := os.Getenv("GOMEMLIMIT"); env != "" {
			log.Info("memory limit", zap.String("limit", env), zap.String("from", "GOMEMLIMIT"))
			return nil
		}
		value, from = defaultMemoryLimit, "default"
	}
	limit, err := parseMemoryLimit(value)
	if err != nil {
		return fmt.Errorf("%s: %w", from, err)
	}
	debug.SetMemoryLimit(limit)
	log.Info("memory limit", zap.String("limit", value), zap.String("from", from))
	return nil
}

// quietBeforeRelease is how long the pipeline applies nothing before
// releaseMemory runs. It must exceed JetStream's file store cache expiry
// (10 s without reads), after which a stream's block cache buffer goes
// back to its pool, free for a collection to take.
const quietBeforeRelease = 15 * time.Second

// startupHeadroomFor bounds the start-up headroom of a pipeline that is
// never quiet for quietBeforeRelease after its first apply.
const startupHeadroomFor = time.Minute

// releaseMemory returns the heap's free pages to the operating system
// each time the pipeline has been quiet for quietBeforeRelease after
// applying something. A burst of changes, start-up above all (every
// object decoded, translated, rendered and published at once), needs far
// more heap than the steady state, and the runtime hands the pages back
// only slowly. After a burst, the file store's block caches (4 to 8 MiB a
// stream) wait in sync.Pools, which keep what they hold over one
// collection: two collections free them (at 10,000 Ingresses, 52 MiB of
// 226). A pipeline busy all the time never waits for these: its own
// collections empty the pools.
//
// started is closed at the first release, or startupHeadroomFor after the
// first apply, whichever comes first: that ends keepHeadroom's start-up
// headroom. Not at the first apply itself: returning a start-up peak's
// pages stalls allocation (at 50,000 Ingresses the first change after
// start-up took 1.9 s instead of 0.1), so that waits for a quiet moment.
func releaseMemory(ctx context.Context, conn *bus.Conn, started chan<- struct{}, log *zap.Logger) {
	// A callback that only signals, never a channel of the messages: the
	// results that arrive before this goroutine reads one (at start-up
	// they come in bursts) would overflow it, and the client would log a
	// "slow consumer" warning for nothing.
	applied := make(chan struct{}, 1)
	sub, err := conn.NC.Subscribe(bus.ApplyResultSubject, func(*nats.Msg) {
		select {
		case applied <- struct{}{}:
		default:
		}
	})
	if err != nil {
		close(started)
		log.Warn("memory is not released after bursts of changes", zap.Error(err))
		return
	}
	defer func() { _ = sub.Unsubscribe() }()
	releaseAfterStartup(ctx, applied, started, quietBeforeRelease, startupHeadroomFor, freeMemory(log))
}

// freeMemory returns the heap's free pages to the operating system. Twice:
// what the first collection finds in sync.Pools is freed by the second.
func freeMemory(log *zap.Logger) func() {
	return func() {
		debug.FreeOSMemory()
		debug.FreeOSMemory()
		log.Debug("memory released after a quiet period")
	}
}

// burstBytes is what a process allocates in a second of a burst: a start,
// or a change of thousands of objects. A one-Ingress change allocates a
// few megabytes, an idle stage next to nothing.
const burstBytes = 32 << 20

// releaseAfterBursts is releaseMemory for a stage running as its own
// process, which may not follow the applier's results on a shared bus: it
// takes its own allocation bursts for the applies (allocationBursts).
func releaseAfterBursts(ctx context.Context, started chan<- struct{}, log *zap.Logger) {
	bursts := make(chan struct{}, 1)
	go allocationBursts(ctx, time.Second, burstBytes, heapAllocated, bursts)
	releaseAfterStartup(ctx, bursts, started, quietBeforeRelease, startupHeadroomFor, freeMemory(log))
}

// allocationBursts signals on bursts (without blocking) after each period
// of every in which the process allocated at least burst bytes, as read by
// allocated (the runtime's cumulative count).
func allocationBursts(ctx context.Context, every time.Duration, burst uint64, allocated func() uint64, bursts chan<- struct{}) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := allocated()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := allocated()
		if now-last >= burst {
			select {
			case bursts <- struct{}{}:
			default:
			}
		}
		last = now
	}
}

// heapAllocated is the bytes allocated on the heap since the process
// started.
func heapAllocated() uint64 {
	v, ok := readCounts([]metrics.Sample{{Name: "/gc/heap/allocs:bytes"}})
	if !ok {
		return 0
	}
	return uint64(v[0])
}

// releaseAfterStartup waits for the first signal on applied, then runs
// releaseWhenQuiet; it closes started at the first release, or startup
// after the first signal, whichever comes first.
func releaseAfterStartup(ctx context.Context, applied <-chan struct{}, started chan<- struct{}, quiet, startup time.Duration, release func()) {
	select {
	case <-ctx.Done():
		return
	case <-applied:
	}
	endStartup := sync.OnceFunc(func() { close(started) })
	deadline := time.AfterFunc(startup, endStartup)
	defer deadline.Stop()
	releaseWhenQuiet(ctx, applied, quiet, func() {
		endStartup()
		release()
	})
}

// releaseWhenQuiet calls release once quiet has passed without a signal
// on applied since the last one, and after that only after a new signal
// (and the same quiet again).
func releaseWhenQuiet(ctx context.Context, applied <-chan struct{}, quiet time.Duration, release func()) {
	timer := time.NewTimer(quiet)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-applied:
			timer.Reset(quiet)
		case <-timer.C:
			release()
			// Nothing to release until something is applied again.
			select {
			case <-ctx.Done():
				return
			case <-applied:
				timer.Reset(quiet)
			}
		}
	}
}
