package bus

import (
	"context"
	"errors"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
)

// Transform computes a stage's table change from its input snapshot. An
// error keeps the last published table: the last good state keeps running.
type Transform func(ctx context.Context, in Snapshot) (Output, error)

// Redo is a change of a stage's table that no input commit caused: a plugin
// back after a restart, a refusal from the applier. Pipe runs it in turn
// with the transform, so both may use the stage's state without a lock of
// their own, and publishes what it returns with the last input's
// generation. A nil Output means nothing is to be published.
type Redo func(ctx context.Context) (*Output, error)

// PipeOption adds to what Pipe does.
type PipeOption func(*pipe)

// WithRedos makes Pipe run every Redo received on redos.
func WithRedos(redos <-chan Redo) PipeOption { return func(p *pipe) { p.redos = redos } }

// WithPublished calls published with every output the bus took, e.g. to
// report the problems it carries.
func WithPublished(published func(Output)) PipeOption {
	return func(p *pipe) { p.published = published }
}

// pipe is one stage's output: its writer and the meta of the last input.
type pipe struct {
	to        string
	log       *zap.Logger
	writer    *Writer
	redos     <-chan Redo
	published func(Output)

	mu   sync.Mutex // the transform and the redos take turns
	last Meta
	// refollow, under mu, ends the current follow of the input after the
	// output's stream lost the table (ErrTableLost): the input, followed
	// again, arrives whole, and so does the output then.
	refollow context.CancelFunc
	lost     bool
}

// Pipe follows the table of stage `from` and publishes stage `to`'s table
// after each input commit (and after each Redo, see WithRedos). It carries
// the generation, the trace (one new span per stage) and the ingest time
// through, and returns when ctx ends.
func Pipe(ctx context.Context, conn *Conn, from, to string, log *zap.Logger, transform Transform, opts ...PipeOption) error {
	p := &pipe{to: to, log: log, writer: NewWriter(conn, to)}
	for _, opt := range opts {
		opt(p)
	}
	if p.redos != nil {
		go p.runRedos(ctx)
	}
	for {
		err := p.follow(ctx, conn, from, transform)
		if ctx.Err() != nil || !p.takeLost() {
			return err
		}
		log.Warn("the table's stream lost it; following the input again to publish the whole table",
			zap.String("stage", to), zap.String("input", from))
	}
}

// follow runs the transform on every input snapshot until ctx ends or the
// output's stream lost the table.
func (p *pipe) follow(ctx context.Context, conn *Conn, from string, transform Transform) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.mu.Lock()
	p.refollow = cancel
	p.mu.Unlock()
	log := p.log
	return Follow(ctx, conn, from, func(ctx context.Context, in Snapshot) error {
		p.mu.Lock()
		defer p.mu.Unlock()
		start := time.Now()
		out, err := transform(ctx, in)
		if err != nil {
			log.Error("transform failed; keeping the last published state",
				zap.Uint64("generation", in.Meta.Generation), zap.Error(err))
			// Nothing goes on the bus, but the trace shows where the change stopped.
			RecordStageSpan(ctx, p.to, in.Meta, in.Meta.Trace.Child(), start, err)
			return nil
		}
		p.last = in.Meta
		p.publish(ctx, out, start)
		return nil
	})
}

// takeLost says whether the output's stream lost the table since the last
// call.
func (p *pipe) takeLost() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	lost := p.lost
	p.lost = false
	return lost
}

func (p *pipe) runRedos(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case redo := <-p.redos:
			p.mu.Lock()
			start := time.Now()
			out, err := redo(ctx)
			switch {
			case err != nil:
				p.log.Error("redo failed; keeping the last published state",
					zap.Uint64("generation", p.last.Generation), zap.Error(err))
			case out != nil:
				p.publish(ctx, *out, start)
			}
			p.mu.Unlock()
		}
	}
}

func (p *pipe) publish(ctx context.Context, out Output, start time.Time) {
	meta := Meta{Generation: p.last.Generation, Trace: p.last.Trace.Child(), Ingest: p.last.Ingest}
	// Apply retries until the bus takes the whole output (an incremental
	// transform's changes are never lost), or ctx ends.
	changed, err := p.writer.Apply(ctx, meta, out)
	if ctx.Err() != nil {
		return
	}
	if errors.Is(err, ErrTableLost) {
		// Only a whole output makes the table whole: the input, followed
		// again, comes whole, and the transform's output with it.
		p.lost = true
		p.refollow()
		return
	}
	if err != nil {
		p.log.Error("keys left out of the table; every other key was published", zap.String("stage", p.to),
			zap.Uint64("generation", meta.Generation), zap.Error(err))
	}
	if p.published != nil {
		p.published(out)
	}
	RecordStageSpan(ctx, p.to, p.last, meta.Trace, start, err,
		attribute.Int("switchyard.changed_keys", changed), attribute.Bool("switchyard.full", out.Full))
	p.log.Debug("published", zap.Uint64("generation", meta.Generation), zap.Int("changedKeys", changed),
		zap.Bool("full", out.Full), zap.Duration("took", time.Since(start)))
}
