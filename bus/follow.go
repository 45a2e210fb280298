package bus

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"
)

// stallCheck is how often a follower whose consumer delivered nothing
// asks the stream whether it holds messages the follower has not seen.
// When a cluster node dies, an ordered consumer can stay silent although
// the stream moved on (its server-side state died with the node or with
// the stream's leadership); the client library notices only some of those
// cases. Two checks that find the follower behind, without progress in
// between, make it start a new consumer after the last message it got.
var stallCheck = 5 * time.Second

// tableFollower keeps one ordered consumer on a stage's stream and
// delivers its messages, in stream order and each once, on out.
type tableFollower struct {
	ctx    context.Context
	conn   *Conn
	stage  string
	stream jetstream.Stream
	out    chan tableMsg

	// mu orders deliveries: a message is checked against lastSeq and sent
	// under it. While a stalled consumer is replaced both may deliver;
	// each delivers in stream order, so taking only what comes after
	// lastSeq hands on every message once and in order.
	mu      sync.Mutex
	lastSeq uint64 // stream sequence of the last message delivered
	// epoch counts the stream's resets (reset): a consumer started before
	// the last one delivers nothing more.
	epoch uint64
	// created is when the stream was created: another time is another
	// stream, whose sequences start over.
	created time.Time
	// consumerMu guards consumer apart from mu: stopping must not wait
	// for a delivery that waits for a reader who is stopping.
	consumerMu sync.Mutex
	consumer   jetstream.ConsumeContext
	// sending is set while a message waits for room on out: the reader is
	// slow, the consumer is not stalled.
	sending atomic.Bool
}

// subscribeTable delivers the last message of every key, then live updates.
// It waits for the bus as long as ctx lasts; the ordered consumer then
// recreates itself whenever the server loses it, and the follower replaces
// it when it stalls (stallCheck).
func subscribeTable(ctx context.Context, conn *Conn, stage string) (<-chan tableMsg, func(), error) {
	stream, err := conn.EnsureStream(ctx, stage)
	if err != nil {
		return nil, nil, err
	}
	f := &tableFollower{ctx: ctx, conn: conn, stage: stage, stream: stream, out: make(chan tableMsg, 1024),
		created: stream.CachedInfo().Created}
	cc, err := retry(ctx, conn, "follow "+stage, func(ctx context.Context) (jetstream.ConsumeContext, error) {
		return f.consume(ctx, fromTheStart, 0)
	})
	if err != nil {
		return nil, nil, err
	}
	f.consumer = cc
	watchCtx, stopWatch := context.WithCancel(ctx)
	go f.watch(watchCtx)
	stop := func() {
		stopWatch()
		f.consumerMu.Lock()
		defer f.consumerMu.Unlock()
		f.consumer.Stop()
	}
	return f.out, stop, nil
}

// fromTheStart delivers the last message of every key: the whole table.
var fromTheStart = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy}

// consume starts an ordered consumer whose messages count while the
// follower's epoch is epoch.
func (f *tableFollower) consume(ctx context.Context, cfg jetstream.OrderedConsumerConfig, epoch uint64) (jetstream.ConsumeContext, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	cons, err := f.stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", f.stage, err)
	}
	cc, err := cons.Consume(func(m jetstream.Msg) { f.handle(m, epoch) })
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", f.stage, err)
	}
	return cc, nil
}

func (f *tableFollower) handle(m jetstream.Msg, epoch uint64) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if epoch != f.epoch || md.Sequence.Stream <= f.lastSeq {
		return
	}
	f.lastSeq = md.Sequence.Stream
	// Consumers keep keys and values (a whole table, at start-up). Copies
	// let the rest go at once: the key is a slice of the subject, the
	// payload shares a buffer with the headers.
	msg := tableMsg{
		key:        strings.Clone(strings.TrimPrefix(m.Subject(), StageSubject(f.stage)+".")),
		data:       bytes.Clone(m.Data()),
		deleted:    m.Headers().Get(HeaderOp) == OpDelete,
		meta:       MetaFromHeader(m.Headers()),
		numPending: md.NumPending,
	}
	f.send(msg)
}

// send hands msg on, or gives up when the follower stops. The caller
// holds mu.
func (f *tableFollower) send(msg tableMsg) {
	f.sending.Store(true)
	defer f.sending.Store(false)
	select {
	case f.out <- msg:
	case <-f.ctx.Done():
	}
}

// delivered is the stream sequence of the last message delivered, and
// the creation time of the stream it is from.
func (f *tableFollower) delivered() (uint64, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastSeq, f.created
}

// watch replaces the consumer when the stream holds messages it has not
// delivered and two checks in a row saw no progress, and starts over from
// the whole table when the stream was created again.
func (f *tableFollower) watch(ctx context.Context) {
	t := time.NewTicker(stallCheck)
	defer t.Stop()
	var behindAt uint64 // what was delivered when the follower was last seen behind
	behind := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// What was delivered first: the stream's state, asked after,
		// holds at least that.
		last, created := f.delivered()
		info, err := f.info(ctx)
		if err != nil {
			continue // no answer
		}
		if !info.Created.Equal(created) || info.State.LastSeq < last {
			f.reset(ctx, info.Created)
			behind = false
			continue
		}
		if !f.isBehind(info, last) {
			behind = false
			continue
		}
		if !behind || behindAt != last {
			behind, behindAt = true, last
			continue
		}
		f.restart(ctx, last)
		behind = false
	}
}

func (f *tableFollower) info(ctx context.Context) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	info, err := f.stream.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", f.stage, err)
	}
	return info, nil
}

// isBehind says whether the stream holds a message after last that the
// follower is not busy handing on.
func (f *tableFollower) isBehind(info *jetstream.StreamInfo, last uint64) bool {
	if f.sending.Load() || len(f.out) > 0 {
		return false
	}
	return info.State.LastSeq > last
}

// reset starts over on a stream that was created again (another creation
// time) or lost messages the follower had (its last sequence went back):
// the sequences seen so far mean nothing there, and what the follower
// handed on may be gone. It tells the reader (a reset message, which
// drops what it collected), then reads the whole table again. If the new
// consumer cannot start, the stream is seen behind, and the next checks
// start one (restart).
func (f *tableFollower) reset(ctx context.Context, created time.Time) {
	f.mu.Lock()
	f.epoch++
	f.lastSeq, f.created = 0, created
	epoch := f.epoch
	f.send(tableMsg{reset: true})
	f.mu.Unlock()

	log := f.conn.Health().logger()
	cc, err := f.consume(ctx, fromTheStart, epoch)
	if err != nil {
		log.Warn("table stream created again; a new consumer did not start", zap.String("stage", f.stage), zap.Error(err))
		return
	}
	f.replace(ctx, cc)
	log.Warn("table stream created again or emptied; reading the whole table", zap.String("stage", f.stage))
}

// replace makes cc the consumer and stops the one before it.
func (f *tableFollower) replace(ctx context.Context, cc jetstream.ConsumeContext) {
	f.consumerMu.Lock()
	if ctx.Err() != nil {
		// The follower stopped meanwhile.
		f.consumerMu.Unlock()
		cc.Stop()
		return
	}
	old := f.consumer
	f.consumer = cc
	f.consumerMu.Unlock()
	old.Stop()
}

// restart starts a consumer after the last message delivered and drops
// the stalled one. If the new one cannot start, the old one stays and the
// next checks try again.
func (f *tableFollower) restart(ctx context.Context, last uint64) {
	f.mu.Lock()
	epoch := f.epoch
	f.mu.Unlock()
	cc, err := f.consume(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: last + 1,
	}, epoch)
	log := f.conn.Health().logger()
	if err != nil {
		log.Warn("follower stalled; a new consumer did not start", zap.String("stage", f.stage), zap.Error(err))
		return
	}
	f.replace(ctx, cc)
	log.Warn("follower stalled: the stream held messages its consumer did not deliver; started a new one",
		zap.String("stage", f.stage), zap.Uint64("after", last))
}
