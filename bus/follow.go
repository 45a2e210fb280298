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
	f := &tableFollower{ctx: ctx, conn: conn, stage: stage, stream: stream, out: make(chan tableMsg, 1024)}
	cc, err := retry(ctx, conn, "follow "+stage, func(ctx context.Context) (jetstream.ConsumeContext, error) {
		return f.consume(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverLastPerSubjectPolicy})
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

// consume starts an ordered consumer.
func (f *tableFollower) consume(ctx context.Context, cfg jetstream.OrderedConsumerConfig) (jetstream.ConsumeContext, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	cons, err := f.stream.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", f.stage, err)
	}
	cc, err := cons.Consume(f.handle)
	if err != nil {
		return nil, fmt.Errorf("follow %s: %w", f.stage, err)
	}
	return cc, nil
}

func (f *tableFollower) handle(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if md.Sequence.Stream <= f.lastSeq {
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
	f.sending.Store(true)
	defer f.sending.Store(false)
	select {
	case f.out <- msg:
	case <-f.ctx.Done():
	}
}

// delivered is the stream sequence of the last message delivered.
func (f *tableFollower) delivered() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastSeq
}

// watch replaces the consumer when the stream holds messages it has not
// delivered and two checks in a row saw no progress.
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
		last := f.delivered()
		if !f.isBehind(ctx, last) {
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

// isBehind says whether the stream holds a message after last that the
// follower is not busy handing on. A failed question is no answer.
func (f *tableFollower) isBehind(ctx context.Context, last uint64) bool {
	if f.sending.Load() || len(f.out) > 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	info, err := f.stream.Info(ctx)
	return err == nil && info.State.LastSeq > last
}

// restart starts a consumer after the last message delivered and drops
// the stalled one. If the new one cannot start, the old one stays and the
// next checks try again.
func (f *tableFollower) restart(ctx context.Context, last uint64) {
	cc, err := f.consume(ctx, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: last + 1,
	})
	log := f.conn.Health().logger()
	if err != nil {
		log.Warn("follower stalled; a new consumer did not start", zap.String("stage", f.stage), zap.Error(err))
		return
	}
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
	log.Warn("follower stalled: the stream held messages its consumer did not deliver; started a new one",
		zap.String("stage", f.stage), zap.Uint64("after", last))
}
