package bus

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"switchyard.dev/switchyard/internal/telemetry"
)

// Two replicas of a stage (a standby, a rolling update's surge) must not
// both publish its table: each would commit its own generations over the
// other's. So a stage run with `switchyard stage` leads only while it
// holds its stage's lease, a key in a JetStream key-value bucket on the
// bus; the other replicas stand by and take over when the holder stops
// renewing it.
//
// The lease lives on the bus, not in a Kubernetes Lease: the stages other
// than the watcher have no API credentials (they touch nothing but the
// bus), a stage that cannot reach the bus could not publish anyway, and the
// same lease works with a manifests directory and no cluster. It follows
// client-go's leader election: takeover by compare-and-set on the key's
// revision, and expiry judged by each standby's own clock (a revision that
// has not changed for a whole lease duration), never by comparing clocks.

// LeaseBucket is the key-value bucket of the stages' leases (named after
// SchemaVersion, as StreamName names the tables).
const LeaseBucket = "SWITCHYARD_V1_LEASES"

// leaseStream is the stream JetStream keeps LeaseBucket in.
const leaseStream = "KV_" + LeaseBucket

// DefaultLeaseDuration is how long a standby waits for a silent holder.
const DefaultLeaseDuration = 15 * time.Second

// Bounds of a lease duration: renewals every fifth of it must fit in a
// loaded machine's scheduling, and a holder's record never holds its
// standbys back longer than MaxLeaseDuration.
const (
	MinLeaseDuration = time.Second
	MaxLeaseDuration = 5 * time.Minute
)

// LeaseConfig says which lease to hold and how.
type LeaseConfig struct {
	// Name is the lease's key: the stage.
	Name string
	// Holder names this process (the pod); it is what the other replicas
	// and the logs see.
	Holder string
	// Duration is how long a standby waits after the last renewal it saw
	// before taking over; zero means DefaultLeaseDuration. The holder
	// renews every Duration/5 and stops leading when it could not for
	// 2/3 of Duration, before any standby may take over.
	Duration time.Duration
	Log      *zap.Logger
}

// leaseRecord is the key's value.
type leaseRecord struct {
	Holder   string `json:"holder"`
	Duration string `json:"duration"`
	Renewed  string `json:"renewed"`
}

// lease is one process's side of a lease.
type lease struct {
	cfg LeaseConfig
	kv  jetstream.KeyValue
	// validUntil is when this process, as holder, must stop publishing
	// (Unix nanoseconds; 0 when it does not hold the lease).
	validUntil atomic.Int64
	// observedRev and observedAt are a standby's view of the holder.
	observedRev uint64
	observedAt  time.Time
}

// RunWithLease runs run while this process holds the lease on conn, and
// stands by while another does. When the lease is lost, run's context
// ends and, once it has returned, the process stands by again. Every
// table publish of conn meanwhile checks the lease (a holder that was
// paused past its lease publishes nothing). It returns nil when ctx ends,
// or run's error when run fails while leading.
func RunWithLease(ctx context.Context, conn *Conn, cfg LeaseConfig, run func(context.Context) error) error {
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultLeaseDuration
	}
	l := &lease{cfg: cfg}
	conn.fence = l.check
	kv, err := retry(ctx, conn, "lease bucket", func(ctx context.Context) (jetstream.KeyValue, error) {
		return ensureLeaseBucket(ctx, conn)
	})
	if err != nil {
		return nil // ctx ended
	}
	l.kv = kv
	for {
		rev, ok := l.acquire(ctx)
		if !ok {
			return nil
		}
		if err := l.lead(ctx, rev, run); err != nil || ctx.Err() != nil {
			return err
		}
	}
}

// ensureLeaseBucket opens the bucket, creating it if it is first.
func ensureLeaseBucket(ctx context.Context, conn *Conn) (jetstream.KeyValue, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	kv, err := conn.JS.KeyValue(ctx, LeaseBucket)
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return kv, err
	}
	kv, err = conn.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: LeaseBucket, History: 1, Storage: conn.storage, Replicas: conn.replicas,
		Description: "which replica of each Switchyard stage publishes its table",
	})
	if err != nil && strings.Contains(err.Error(), "already in use") {
		// Another replica created it meanwhile.
		return conn.JS.KeyValue(ctx, LeaseBucket)
	}
	return kv, err
}

// electionName labels the lease in nginx_ingress_controller_leader_election_status.
func (l *lease) electionName() string { return "switchyard-stage-" + l.cfg.Name }

// retryPeriod is how often a standby looks and the holder renews.
func (l *lease) retryPeriod() time.Duration { return l.cfg.Duration / 5 }

// renewDeadline is how long the holder may fail to renew before it stops.
func (l *lease) renewDeadline() time.Duration { return l.cfg.Duration * 2 / 3 }

func (l *lease) check() error {
	if time.Now().UnixNano() < l.validUntil.Load() {
		return nil
	}
	return fmt.Errorf("this replica does not hold the %s lease", l.cfg.Name)
}

func (l *lease) record() []byte {
	data, _ := json.Marshal(leaseRecord{Holder: l.cfg.Holder, Duration: l.cfg.Duration.String(), Renewed: time.Now().UTC().Format(time.RFC3339Nano)})
	return data
}

// acquire stands by until this process holds the lease; false when ctx
// ended first.
func (l *lease) acquire(ctx context.Context) (uint64, bool) {
	l.observedRev, l.observedAt = 0, time.Time{}
	var holder string
	for {
		rev, current, err := l.tryAcquire(ctx)
		if err == nil && current == "" {
			l.cfg.Log.Info("leading", zap.String("lease", l.cfg.Name), zap.String("holder", l.cfg.Holder))
			telemetry.Get().LeaderElection(l.electionName(), true)
			return rev, true
		}
		if err != nil {
			l.cfg.Log.Debug("lease", zap.String("lease", l.cfg.Name), zap.Error(err))
		} else if current != holder {
			telemetry.Get().LeaderElection(l.electionName(), false)
			holder = current
			l.cfg.Log.Info("standing by", zap.String("lease", l.cfg.Name), zap.String("leader", holder))
		}
		if !sleep(ctx, l.retryPeriod()) {
			return 0, false
		}
	}
}

// tryAcquire takes the lease if it is free, ours, or its holder has not
// renewed it for a whole duration. It returns the new revision, or the
// holder that keeps it ("" when we hold it).
func (l *lease) tryAcquire(ctx context.Context) (uint64, string, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	e, err := l.kv.Get(ctx, l.cfg.Name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		rev, err := l.kv.Create(ctx, l.cfg.Name, l.record())
		return l.took(rev, err)
	}
	if err != nil {
		return 0, "", err
	}
	var rec leaseRecord
	_ = json.Unmarshal(e.Value(), &rec)
	if rec.Holder != l.cfg.Holder {
		wait := l.cfg.Duration
		if d, err := time.ParseDuration(rec.Duration); err == nil && d > wait && d <= MaxLeaseDuration {
			wait = d // the holder's own promise, if longer
		}
		if e.Revision() != l.observedRev {
			l.observedRev, l.observedAt = e.Revision(), time.Now()
			return 0, rec.Holder, nil
		}
		if time.Since(l.observedAt) < wait {
			return 0, rec.Holder, nil
		}
	}
	rev, err := l.kv.Update(ctx, l.cfg.Name, l.record(), e.Revision())
	return l.took(rev, err)
}

// took marks the lease held from now when the write that took it worked.
func (l *lease) took(rev uint64, err error) (uint64, string, error) {
	if err != nil {
		return 0, "", err
	}
	l.validUntil.Store(time.Now().Add(l.renewDeadline()).UnixNano())
	return rev, "", nil
}

// lead runs run while renewing the lease. It returns nil when the lease
// is lost (run stopped) or ctx ended, run's error when run failed.
func (l *lease) lead(ctx context.Context, rev uint64, run func(context.Context) error) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- run(runCtx) }()
	renew := time.NewTicker(l.retryPeriod())
	defer renew.Stop()
	for {
		select {
		case err := <-done:
			l.release(rev)
			if ctx.Err() != nil {
				return nil
			}
			if err == nil {
				err = fmt.Errorf("%s stopped while leading", l.cfg.Name)
			}
			return err
		case <-renew.C:
			next, lost := l.renew(ctx, rev)
			if !lost {
				rev = next
				continue
			}
			l.validUntil.Store(0)
			telemetry.Get().LeaderElection(l.electionName(), false)
			stop()
			<-done
			l.cfg.Log.Warn("lost the lease: standing by", zap.String("lease", l.cfg.Name), zap.String("holder", l.cfg.Holder))
			return nil
		}
	}
}

// renew writes the lease again; lost when another replica took it or no
// renewal worked for renewDeadline (a standby may take it soon).
func (l *lease) renew(ctx context.Context, rev uint64) (uint64, bool) {
	callCtx, cancel := context.WithTimeout(ctx, l.retryPeriod())
	defer cancel()
	next, err := l.kv.Update(callCtx, l.cfg.Name, l.record(), rev)
	if err == nil {
		l.validUntil.Store(time.Now().Add(l.renewDeadline()).UnixNano())
		return next, false
	}
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return 0, true // someone else's revision now
	}
	l.cfg.Log.Debug("renew lease", zap.String("lease", l.cfg.Name), zap.Error(err))
	return rev, time.Now().UnixNano() >= l.validUntil.Load()
}

// release gives the lease up at once, so a standby need not wait it out.
func (l *lease) release(rev uint64) {
	l.validUntil.Store(0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.kv.Delete(ctx, l.cfg.Name, jetstream.LastRevision(rev)); err != nil {
		l.cfg.Log.Debug("release lease", zap.String("lease", l.cfg.Name), zap.Error(err))
	}
}
