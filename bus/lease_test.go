package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// leaders records which holders run at once.
type leaders struct {
	mu      sync.Mutex
	running map[string]bool
	most    int
	started []string
}

func (l *leaders) run(holder string) func(context.Context) error {
	return func(ctx context.Context) error {
		l.mu.Lock()
		l.running[holder] = true
		l.started = append(l.started, holder)
		l.most = max(l.most, len(l.running))
		l.mu.Unlock()
		<-ctx.Done()
		l.mu.Lock()
		delete(l.running, holder)
		l.mu.Unlock()
		return nil
	}
}

func (l *leaders) waitStarted(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		l.mu.Lock()
		started := append([]string(nil), l.started...)
		l.mu.Unlock()
		if len(started) >= n {
			return started
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("fewer than %d terms started", n)
	return nil
}

// TestLeaseOneLeaderAtATime: two replicas of the translator, each on its
// own connection as the translator's identity: one leads, the other
// stands by; when the leader stops, the standby takes over; never both.
// The standby's connection may not publish the table.
func TestLeaseOneLeaderAtATime(t *testing.T) {
	e, dir := lockedBus(t)
	l := &leaders{running: map[string]bool{}}
	ctxA, stopA := context.WithCancel(context.Background())
	defer stopA()
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	cfg := func(holder string) LeaseConfig {
		return LeaseConfig{Name: StageTranslator, Holder: holder, Duration: 2 * time.Second, Log: zap.NewNop()}
	}
	connA, connB := connectAs(t, e, dir, StageTranslator), connectAs(t, e, dir, StageTranslator)
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- RunWithLease(ctxA, connA, cfg("a"), l.run("a")) }()
	first := l.waitStarted(t, 1)[0]
	go func() { doneB <- RunWithLease(ctxB, connB, cfg("b"), l.run("b")) }()
	if first != "a" {
		t.Fatalf("first leader %q, want a", first)
	}
	// b stands by for several of its retry periods.
	time.Sleep(1500 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := NewWriter(connB, StageTranslator).Publish(ctx, Meta{Generation: 1}, map[string][]byte{"server.x": []byte("1")}); err == nil {
		t.Fatal("the standby published the table")
	}
	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("the leader's RunWithLease: %v", err)
	}
	if got := l.waitStarted(t, 2); got[1] != "b" {
		t.Fatalf("terms %v, want b after a", got)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel2()
	if _, err := NewWriter(connB, StageTranslator).Publish(ctx2, Meta{Generation: 1}, map[string][]byte{"server.x": []byte("1")}); err != nil {
		t.Fatalf("the new leader publishes: %v", err)
	}
	stopB()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	if l.most != 1 {
		t.Fatalf("%d leaders at once", l.most)
	}
}

// TestLeaseTakenOverFromASilentHolder: a holder that stops renewing (its
// process frozen) loses the lease to a standby after the lease duration,
// and its own publishes are refused from its renew deadline on.
func TestLeaseTakenOverFromASilentHolder(t *testing.T) {
	e, dir := lockedBus(t)
	conn := connectAs(t, e, dir, StageRenderer)
	kv, err := ensureLeaseBucket(t.Context(), conn)
	if err != nil {
		t.Fatal(err)
	}
	// A holder that took the lease and then went silent.
	silent := &lease{cfg: LeaseConfig{Name: StageRenderer, Holder: "frozen", Duration: time.Second, Log: zap.NewNop()}, kv: kv}
	if _, holder, err := silent.tryAcquire(t.Context()); err != nil || holder != "" {
		t.Fatalf("the first holder: %q %v", holder, err)
	}
	if err := silent.check(); err != nil {
		t.Fatalf("a fresh holder is fenced: %v", err)
	}
	l := &leaders{running: map[string]bool{}}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	start := time.Now()
	go func() {
		done <- RunWithLease(ctx, connectAs(t, e, dir, StageRenderer),
			LeaseConfig{Name: StageRenderer, Holder: "standby", Duration: time.Second, Log: zap.NewNop()}, l.run("standby"))
	}()
	l.waitStarted(t, 1)
	if waited := time.Since(start); waited < time.Second {
		t.Fatalf("took over after %s, before the lease duration", waited)
	}
	if err := silent.check(); err == nil {
		t.Fatal("the silent holder may still publish after its renew deadline")
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLeaseKeysArePerIdentity: a stage's identity cannot write another
// stage's lease.
func TestLeaseKeysArePerIdentity(t *testing.T) {
	e, dir := lockedBus(t)
	conn := connectAs(t, e, dir, StageTranslator)
	kv, err := ensureLeaseBucket(t.Context(), conn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	if _, err := kv.Create(ctx, StageRenderer, []byte(`{"holder":"forged"}`)); err == nil {
		t.Fatal("the translator took the renderer's lease")
	}
	if _, err := kv.Create(t.Context(), StageTranslator, []byte(`{"holder":"t"}`)); err != nil {
		t.Fatalf("the translator writes its own lease: %v", err)
	}
}
