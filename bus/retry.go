package bus

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.uber.org/zap"
)

// A bus that is slow or away (a loaded machine, a restarting NATS cluster)
// must never end a stage: every call to JetStream is retried with capped
// backoff until it succeeds or ctx ends, and while calls fail the stage
// reports itself not ready. NGINX keeps what it was last given meanwhile.

// Backoff bounds for calls to the bus.
const (
	RetryMin = 100 * time.Millisecond
	RetryMax = 5 * time.Second
)

// Backoff doubles a delay from min up to max.
type Backoff struct{ cur, min, max time.Duration }

// NewBackoff returns a backoff starting at min.
func NewBackoff(min, max time.Duration) *Backoff { return &Backoff{cur: min, min: min, max: max} }

// Next returns the delay to wait now and doubles the next one.
func (b *Backoff) Next() time.Duration {
	d := b.cur
	b.cur = min(b.cur*2, b.max)
	return d
}

// Reset starts over at min.
func (b *Backoff) Reset() { b.cur = b.min }

// sleep waits d, or less if ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// retry calls fn until it succeeds or ctx ends. Each failure marks conn not
// ready for what; success marks it ready again. It returns fn's last error
// only when ctx ended.
func retry[T any](ctx context.Context, conn *Conn, what string, fn func(context.Context) (T, error)) (T, error) {
	b := NewBackoff(RetryMin, RetryMax)
	for {
		v, err := fn(ctx)
		if err == nil {
			conn.Health().set(what, nil)
			return v, nil
		}
		if ctx.Err() != nil {
			return v, err
		}
		conn.Health().set(what, err)
		if !sleep(ctx, b.Next()) {
			return v, err
		}
	}
}

// Health is whether one connection's calls to the bus succeed. A change is
// logged, once, rather than every failed attempt.
type Health struct {
	mu      sync.Mutex
	log     *zap.Logger
	failing map[string]error // what → its last error
}

func newHealth() *Health { return &Health{log: zap.NewNop(), failing: map[string]error{}} }

// SetLogger names where changes of readiness are logged.
func (h *Health) SetLogger(log *zap.Logger) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.log = log
}

func (h *Health) logger() *zap.Logger {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.log
}

// Ready reports whether no call to the bus is failing now, and if one is,
// its error.
func (h *Health) Ready() (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var errs []error
	for _, err := range h.failing {
		errs = append(errs, err)
	}
	return len(errs) == 0, errors.Join(errs...)
}

// set records the outcome of one call to the bus.
func (h *Health) set(what string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	wasReady := len(h.failing) == 0
	_, wasFailing := h.failing[what]
	if err == nil {
		if !wasFailing {
			return
		}
		delete(h.failing, what)
		h.log.Info("bus reachable again", zap.String("call", what))
		if len(h.failing) == 0 {
			h.log.Info("ready: the bus answers")
		}
		return
	}
	h.failing[what] = err
	if !wasFailing {
		h.log.Warn("bus call failed; retrying", zap.String("call", what), zap.Error(err))
	}
	if wasReady {
		h.log.Warn("not ready: the bus does not answer; the last good state keeps running")
	}
}
