package bus

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/zap"

	"switchyard.dev/switchyard/internal/telemetry"
)

// A state table is what one stage publishes: a value per key, kept by
// JetStream (one message per subject), and a commit message closing each
// generation. Producers publish whole states and explicit deletes, never
// deltas; consumers see a consistent table at every commit.

// Commit is the payload of a commit message.
type Commit struct {
	Generation uint64 `json:"generation"`
	// Keys is how many keys the table holds after this generation.
	Keys int `json:"keys"`
}

// Writer publishes one stage's table. It remembers a digest of what it
// published, so an unchanged value is never sent again without the writer
// keeping a copy of every value.
type Writer struct {
	conn      *Conn
	stage     string
	published map[string]digest // what the table holds, by key
	loaded    bool
	lastGen   uint64
	// committed: this writer has committed a generation. Its first
	// Apply commits even when nothing changed, so that followers start:
	// a Load beforehand (the watcher reads its last generation) must not
	// turn an empty first set into no commit at all.
	committed bool
	// created is when the stream was created and lastSeq the sequence of
	// the last message this writer stored there: what tells that the
	// stream lost the table (checkStream).
	created time.Time
	lastSeq uint64
	// needFull says the stream lost the table: only a whole output can
	// make it whole again.
	needFull bool
}

// digest identifies a published value: the first 128 bits of its SHA-256,
// so that two values of one key never share one by chance. It must be the
// same in every process: Load computes it from what an earlier process
// published.
type digest [16]byte

func digestOf(data []byte) digest {
	sum := sha256.Sum256(data)
	return digest(sum[:16])
}

// NewWriter returns a writer for stage's table.
func NewWriter(conn *Conn, stage string) *Writer {
	return &Writer{conn: conn, stage: stage}
}

// Output is one generation of a stage's table: either the whole table
// (Full), or the keys put and deleted since the last generation. A key is
// put either already encoded (Puts) or as a value the writer encodes as
// JSON when it sends it (Values), so that a whole table is never held
// encoded at once; a key is in one of the two, not both.
type Output struct {
	Puts    map[string][]byte
	Values  map[string]any
	Deletes []string
	Full    bool
}

// ErrTableLost is what Apply returns for an output of changes only when
// the table's stream lost what was published before (it was deleted and
// created again, or emptied): the changes alone would make a table that
// looks whole and is not. Nothing is published; the caller sends its whole
// table instead (Output.Full), which goes out key by key.
var ErrTableLost = errors.New("the table's stream lost what was published; a whole table is needed")

// ErrTooLarge marks a value over the bus limit. Apply leaves such a key as
// it was (its last value stays published), still publishes every other key
// and commits, and returns an error naming the stage and the key.
var ErrTooLarge = errors.New("over the bus limit")

// Apply publishes an Output: it puts every changed value, deletes the given
// keys (with Full, every key the output does not hold), and then commits
// the generation in meta. It returns how many keys changed. Nothing is sent
// when nothing changed, except for the first publish, which always commits
// so consumers start.
//
// A failed call to the bus is retried with capped backoff until it works or
// ctx ends; meanwhile the connection reports not ready. Each attempt reads
// the table back first, so what an earlier attempt half published is
// neither lost nor resent needlessly. The error returned is ctx's, or
// names the keys left out (ErrTooLarge, or a value that does not encode),
// whose batch was still published and committed.
func (w *Writer) Apply(ctx context.Context, meta Meta, out Output) (int, error) {
	if err := w.checkStream(ctx, out.Full); err != nil {
		if errors.Is(err, ErrTableLost) && out.empty() {
			// Nothing to publish, and no table to commit: the stream
			// waits for the whole table as it is.
			return 0, nil
		}
		return 0, err
	}
	type result struct {
		changed int
		skipped []error
	}
	r, err := retry(ctx, w.conn, "publish "+w.stage, func(ctx context.Context) (result, error) {
		changed, skipped, err := w.applyOnce(ctx, meta, out)
		if err != nil {
			// What the table holds is unknown now: read it again.
			w.loaded = false
		}
		return result{changed, skipped}, err
	})
	if err != nil {
		return r.changed, err
	}
	return r.changed, errors.Join(r.skipped...)
}

// checkStream notices that the table's stream lost what this writer
// published: deleted (and perhaps created again by a reader), emptied, or
// its sequence gone back. The writer then forgets what it published, so
// that its next whole output is sent whole rather than as the keys that
// changed; until that output comes, one of changes only gets ErrTableLost.
func (w *Writer) checkStream(ctx context.Context, full bool) error {
	if w.loaded {
		info, err := retry(ctx, w.conn, "check stream "+StreamName(w.stage), w.streamInfo)
		if err != nil {
			return err
		}
		if reason := w.lost(info); reason != "" {
			w.conn.Health().logger().Warn("table's stream lost what was published; publishing the whole table again",
				zap.String("stage", w.stage), zap.String("why", reason), zap.Int("keys", len(w.published)))
			w.loaded, w.needFull = false, true
		}
	}
	if w.needFull && !full {
		return fmt.Errorf("publish %s: %w", w.stage, ErrTableLost)
	}
	return nil
}

// empty says out changes nothing.
func (out Output) empty() bool {
	return !out.Full && len(out.Puts) == 0 && len(out.Values) == 0 && len(out.Deletes) == 0
}

// streamInfo asks the bus about the table's stream; nil when there is none.
func (w *Writer) streamInfo(ctx context.Context) (*jetstream.StreamInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	stream, err := w.conn.JS.Stream(ctx, StreamName(w.stage))
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("check stream %s: %w", StreamName(w.stage), err)
	}
	return stream.CachedInfo(), nil
}

// lost says why the stream no longer holds what this writer published, or
// "" when it does. Each key is one subject, of which the stream keeps the
// last message, so it holds at least as many messages as the table keys.
func (w *Writer) lost(info *jetstream.StreamInfo) string {
	switch {
	case info == nil:
		return "deleted"
	case !info.Created.Equal(w.created):
		return "created again"
	case info.State.LastSeq < w.lastSeq:
		return "sequence went back"
	case info.State.Msgs < uint64(len(w.published)):
		return "emptied"
	}
	return ""
}

// applyOnce is one attempt of Apply. Its error is the bus's; skipped says
// which keys were left out.
func (w *Writer) applyOnce(ctx context.Context, meta Meta, out Output) (changed int, skipped []error, err error) {
	meta.Stage, meta.Instance = w.stage, w.conn.instance
	first := !w.loaded || !w.committed
	if _, err := w.Load(ctx); err != nil {
		return 0, nil, err
	}
	b := w.batch(ctx, meta)
	for _, key := range slices.Sorted(maps.Keys(out.Puts)) {
		if err := b.put(key, out.Puts[key]); err != nil {
			return b.changed, nil, err
		}
	}
	if err := b.putValues(out.Values); err != nil {
		return b.changed, nil, err
	}
	deletes := out.Deletes
	if out.Full {
		deletes = w.keysNotIn(out)
	}
	for _, key := range deletes {
		if err := b.delete(key); err != nil {
			return b.changed, nil, err
		}
	}
	committed := b.changed > 0 || first
	changed, err = b.commit(first, len(w.published))
	if err == nil && out.Full {
		w.needFull = false
	}
	if err == nil {
		telemetry.Get().StageHandled(w.stage, meta.Generation, meta.Ingest, committed)
	}
	return changed, b.skipped, err
}

// encodeChunk is how many values putValues encodes at once: enough to
// keep every CPU busy, few enough that the table is never held encoded
// whole.
const encodeChunk = 1024

// putValues encodes and puts values, in key order, a chunk at a time. A
// value that does not encode is left out and recorded in skipped.
func (b *batch) putValues(values map[string]any) error {
	keys := slices.Sorted(maps.Keys(values))
	for start := 0; start < len(keys); start += encodeChunk {
		chunk := keys[start:min(start+encodeChunk, len(keys))]
		encoded, errs := EncodeValues(values, chunk)
		for i, key := range chunk {
			if errs != nil && errs[i] != nil {
				b.skipped = append(b.skipped, fmt.Errorf("publish %s: %w", b.w.stage, errs[i]))
				continue
			}
			if err := b.put(key, encoded[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// keysNotIn lists, sorted, the published keys a whole-table output drops.
func (w *Writer) keysNotIn(out Output) []string {
	var gone []string
	for _, key := range slices.Sorted(maps.Keys(w.published)) {
		_, put := out.Puts[key]
		_, encoded := out.Values[key]
		if !put && !encoded {
			gone = append(gone, key)
		}
	}
	return gone
}

// PublishDelta puts and deletes the given keys only, then commits: a change
// to one key costs one message, whatever the size of the table.
func (w *Writer) PublishDelta(ctx context.Context, meta Meta, puts map[string][]byte, deletes []string) (int, error) {
	return w.Apply(ctx, meta, Output{Puts: puts, Deletes: deletes})
}

// Publish makes the table equal to entries; see Apply.
func (w *Writer) Publish(ctx context.Context, meta Meta, entries map[string][]byte) (int, error) {
	return w.Apply(ctx, meta, Output{Puts: entries, Full: true})
}

// maxInFlight bounds how many messages of a batch await their ack. The
// client keeps each message (its payload too) until it is acked, and fails
// a publish once 4,000 are outstanding; a whole table at start-up is tens
// of thousands of messages, so the batch waits for its acks every so often.
const maxInFlight = 256

// batch collects the messages of one generation and their acks.
type batch struct {
	ctx     context.Context
	w       *Writer
	meta    Meta
	header  nats.Header
	futures []jetstream.PubAckFuture
	changed int
	// skipped are the keys left out, each with why.
	skipped []error
}

func (w *Writer) batch(ctx context.Context, meta Meta) *batch {
	return &batch{ctx: ctx, w: w, meta: meta, header: meta.Header()}
}

// MaxValue is the largest value a key may hold: the bus limit less room
// for the subject and headers.
const MaxValue = MaxPayload - 4096

func (b *batch) send(key string, data []byte, h nats.Header) error {
	if err := b.w.conn.checkFence(); err != nil {
		return fmt.Errorf("publish %s %s: %w", b.w.stage, key, err)
	}
	if len(b.futures) >= maxInFlight {
		if err := b.wait(); err != nil {
			return err
		}
	}
	subject := b.w.subject(key)
	f, err := b.w.conn.JS.PublishMsgAsync(&nats.Msg{Subject: subject, Data: data, Header: h})
	if err != nil {
		return fmt.Errorf("publish %s %s: %w", b.w.stage, key, err)
	}
	b.w.conn.traceCopy(subject, h)
	b.futures = append(b.futures, f)
	telemetry.Get().BusSent(b.w.stage, keyKind(key), len(data))
	return nil
}

// keyKind is the first token of a table key (its kind, or "commit"): a
// bounded label for the bus metrics.
func keyKind(key string) string {
	kind, _, _ := strings.Cut(key, ".")
	return kind
}

// put sends a value unless it equals the published one.
func (b *batch) put(key string, data []byte) error {
	sum := digestOf(data)
	if old, ok := b.w.published[key]; ok && old == sum {
		return nil
	}
	if len(data) > MaxValue {
		// One key too large must not hold back the others: its last
		// value stays, and the error names it.
		b.skipped = append(b.skipped, fmt.Errorf("publish %s %s: %d bytes: %w of %d bytes", b.w.stage, key, len(data), ErrTooLarge, MaxValue))
		return nil
	}
	if err := b.send(key, data, b.header); err != nil {
		return err
	}
	b.w.published[key] = sum
	b.changed++
	return nil
}

func (b *batch) delete(key string) error {
	if _, ok := b.w.published[key]; !ok {
		return nil
	}
	h := b.meta.Header()
	h.Set(HeaderOp, OpDelete)
	if err := b.send(key, nil, h); err != nil {
		return err
	}
	delete(b.w.published, key)
	b.changed++
	return nil
}

// commit closes the generation, unless nothing changed (the first publish
// always commits, so consumers start).
func (b *batch) commit(first bool, keys int) (int, error) {
	if b.changed == 0 && !first {
		return 0, nil
	}
	// The commit goes out once every put of the generation is stored: a
	// put lost in a cluster's failover must never sit behind its commit,
	// where a follower would take the generation for complete without it.
	if err := b.wait(); err != nil {
		return b.changed, err
	}
	commit, _ := json.Marshal(Commit{Generation: b.meta.Generation, Keys: keys})
	if err := b.send(CommitToken, commit, b.header); err != nil {
		return b.changed, err
	}
	b.w.lastGen = b.meta.Generation
	if err := b.wait(); err != nil {
		return b.changed, err
	}
	b.w.committed = true
	return b.changed, nil
}

// wait waits for the acks of the messages sent, and notes the sequence of
// the last one stored.
func (b *batch) wait() error {
	seq, err := waitAcks(b.ctx, b.futures)
	b.w.lastSeq = max(b.w.lastSeq, seq)
	if err == nil {
		b.futures = b.futures[:0]
	}
	return err
}

// waitAcks waits for every future's ack and returns the highest stream
// sequence among them.
func waitAcks(ctx context.Context, futures []jetstream.PubAckFuture) (last uint64, err error) {
	for _, f := range futures {
		select {
		case ack := <-f.Ok():
			last = max(last, ack.Sequence)
		case err := <-f.Err():
			return last, fmt.Errorf("publish %s: %w", f.Msg().Subject, err)
		case <-ctx.Done():
			return last, ctx.Err()
		}
	}
	return last, nil
}

func (w *Writer) subject(key string) string { return StageSubject(w.stage) + "." + key }

// Load reads what the table already holds (a restarted producer on an
// external bus), so that stale keys are deleted and equal ones not resent,
// and returns the generation of its last commit. Publish calls it first.
func (w *Writer) Load(ctx context.Context) (lastGeneration uint64, err error) {
	if w.loaded {
		return w.lastGen, nil
	}
	stream, err := w.conn.ensureOwnStream(ctx, w.stage)
	if err != nil {
		return 0, err
	}
	// Only this writer adds to the stream: what it holds now is what the
	// table is read from.
	info := stream.CachedInfo()
	entries, meta, err := ReadTable(ctx, w.conn, w.stage)
	if err != nil {
		return 0, err
	}
	w.published = make(map[string]digest, len(entries))
	for key, data := range entries {
		w.published[key] = digestOf(data)
	}
	w.loaded, w.lastGen = true, meta.Generation
	w.created, w.lastSeq = info.Created, info.State.LastSeq
	return w.lastGen, nil
}

// Snapshot is what changed in a table up to one commit. The first snapshot
// a follower gets is Full: Puts holds every entry, and the follower builds
// its state from it. Every later one holds only the keys put (with their
// values) and deleted since the previous snapshot. Follow keeps no values
// itself, so each consumer holds one copy of what it needs, not a second
// copy of the whole table.
//
// A snapshot always ends at a commit, and only at one whose generation is
// whole: the table then holds as many keys as the commit says
// (Commit.Keys). A consumer never sees part of a generation.
type Snapshot struct {
	Meta Meta
	// Full says Puts is the whole table: the follower starts over.
	Full bool
	// Puts maps each key put since the previous snapshot to its value.
	// The follower may keep the values: Follow does not reuse them.
	Puts map[string][]byte
	// Deletes lists, sorted, the keys deleted since the previous snapshot.
	// A key may be listed that the follower never saw (put and deleted
	// between two snapshots); deleting it must be harmless.
	Deletes []string
}

// incompleteWarnAfter is how many commits in a row may find their table
// incomplete before Follow warns that its stage is held up.
const incompleteWarnAfter = 3

// Follow calls handle with what changed in stage's table after each commit,
// starting with the whole current table (see Snapshot). Commits that arrive
// while more messages are already waiting are folded into the next call,
// so a burst of generations costs one call. When the table's stream is
// found deleted and created again, the next call is Full again. It
// returns when ctx ends.
func Follow(ctx context.Context, conn *Conn, stage string, handle func(context.Context, Snapshot) error) error {
	msgs, stop, err := subscribeTable(ctx, conn, stage)
	if err != nil {
		return err
	}
	defer stop()

	log := conn.Health().logger().With(zap.String("stage", stage))
	t := newFollowedTable()
	var flush <-chan time.Time
	// incomplete counts the commits in a row whose table was not whole:
	// one is a catch-up in progress, several mean a stage downstream
	// waits, which must not go unseen.
	incomplete := 0
	deliver := func() error {
		flush = nil
		if !t.complete {
			return nil
		}
		return handle(ctx, t.take())
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-flush:
			if err := deliver(); err != nil {
				return err
			}
		case m := <-msgs:
			switch {
			case m.reset:
				log.Warn("table stream was created again; reading the whole table")
				t, flush = newFollowedTable(), nil
				continue
			case m.key != CommitToken:
				// Part of a generation whose commit has not come: it
				// goes on with that commit, never before.
				t.uncommitted = append(t.uncommitted, m)
				continue
			}
			if keys, want := t.commit(m); keys != want {
				incomplete++
				level := zap.InfoLevel
				if incomplete >= incompleteWarnAfter {
					level = zap.WarnLevel
				}
				log.Log(level, "table incomplete at its commit; keeping it back until a whole generation",
					zap.Uint64("generation", m.meta.Generation), zap.Int("keys", keys), zap.Int("commitKeys", want),
					zap.Int("incompleteCommitsInARow", incomplete))
				continue
			}
			incomplete = 0
			if m.numPending == 0 {
				if err := deliver(); err != nil {
					return err
				}
			} else if flush == nil {
				// More is queued; wait briefly for its commit, but never
				// hold a complete generation back for long.
				flush = time.After(20 * time.Millisecond)
			}
		}
	}
}

// followedTable is what Follow knows of a table between two snapshots.
type followedTable struct {
	// pending are the committed changes not handed on yet.
	pending *tableChanges
	// uncommitted are the messages after the last commit, in stream order.
	uncommitted []tableMsg
	// keys are the keys the table holds at the last commit (no values):
	// what tells a whole generation from part of one.
	keys map[string]struct{}
	// meta is the last commit's; complete says its generation is whole.
	meta     Meta
	complete bool
	// delivered says a snapshot went out: the next one is not Full.
	delivered bool
}

func newFollowedTable() *followedTable {
	return &followedTable{pending: newTableChanges(), keys: map[string]struct{}{}}
}

// commit folds the messages before commit message m into the pending
// changes and returns how many keys the table holds and how many m says
// it holds; the generation is complete when the two agree. A commit
// whose payload does not decode says nothing, and is taken as complete.
func (t *followedTable) commit(m tableMsg) (keys, want int) {
	for _, u := range t.uncommitted {
		t.pending.add(u, !t.delivered)
		if u.deleted {
			delete(t.keys, u.key)
		} else {
			t.keys[u.key] = struct{}{}
		}
	}
	t.uncommitted, t.meta = nil, m.meta
	want = len(t.keys)
	var c Commit
	if err := json.Unmarshal(m.data, &c); err == nil {
		want = c.Keys
	}
	t.complete = len(t.keys) == want
	return len(t.keys), want
}

// take returns the pending changes as a snapshot and starts collecting
// the next.
func (t *followedTable) take() Snapshot {
	snap := t.pending.snapshot(t.meta, !t.delivered)
	t.pending, t.delivered = newTableChanges(), true
	return snap
}

// tableChanges collects the messages between two snapshots: the last value
// of each key put, and the keys deleted.
type tableChanges struct {
	puts    map[string][]byte
	deletes map[string]bool
}

func newTableChanges() *tableChanges {
	return &tableChanges{puts: map[string][]byte{}, deletes: map[string]bool{}}
}

// add folds one message in. Before the first snapshot the follower has
// nothing to delete, so a deleted key is only forgotten.
func (c *tableChanges) add(m tableMsg, initial bool) {
	if !m.deleted {
		c.puts[m.key] = m.data
		delete(c.deletes, m.key)
		return
	}
	delete(c.puts, m.key)
	if !initial {
		c.deletes[m.key] = true
	}
}

func (c *tableChanges) snapshot(meta Meta, full bool) Snapshot {
	return Snapshot{Meta: meta, Full: full, Puts: c.puts, Deletes: slices.Sorted(maps.Keys(c.deletes))}
}

type tableMsg struct {
	// reset says the stream was created again: what came before is gone,
	// and the stream is read again from its start.
	reset      bool
	key        string
	data       []byte
	deleted    bool
	meta       Meta
	numPending uint64
}

// ReadTable returns what stage's table holds now, and the meta of its last
// commit, without following it. It waits for the bus as long as ctx lasts.
func ReadTable(ctx context.Context, conn *Conn, stage string) (map[string][]byte, Meta, error) {
	type table struct {
		entries map[string][]byte
		meta    Meta
	}
	t, err := retry(ctx, conn, "read "+stage, func(ctx context.Context) (table, error) {
		entries, meta, err := readTable(ctx, conn, stage)
		return table{entries, meta}, err
	})
	return t.entries, t.meta, err
}

func readTable(ctx context.Context, conn *Conn, stage string) (map[string][]byte, Meta, error) {
	stream, err := conn.EnsureStream(ctx, stage)
	if err != nil {
		return nil, Meta{}, err
	}
	info, err := stream.Info(ctx)
	if err != nil {
		return nil, Meta{}, fmt.Errorf("read %s: %w", stage, err)
	}
	entries := map[string][]byte{}
	var meta Meta
	if info.State.Msgs == 0 {
		return entries, meta, nil
	}
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs, stop, err := subscribeTable(subCtx, conn, stage)
	if err != nil {
		return nil, Meta{}, err
	}
	defer stop()
	// A table that stops arriving (the bus went away) is read again.
	timeout := time.NewTimer(30 * time.Second)
	defer timeout.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil, Meta{}, ctx.Err()
		case <-timeout.C:
			return nil, Meta{}, fmt.Errorf("read %s: table did not arrive in time", stage)
		case m := <-msgs:
			switch {
			case m.key == CommitToken:
				meta = m.meta
			case m.deleted:
				delete(entries, m.key)
			default:
				entries[m.key] = m.data
			}
			if m.numPending == 0 {
				return entries, meta, nil
			}
		}
	}
}
