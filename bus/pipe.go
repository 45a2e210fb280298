package bus

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Transform computes a stage's table change from its input snapshot. An
// error keeps the last published table: the last good state keeps running.
type Transform func(ctx context.Context, in Snapshot) (Output, error)

// Pipe follows the table of stage `from` and publishes stage `to`'s table
// after each input commit. It carries the generation, the trace (one new
// span per stage) and the ingest time through, and returns when ctx ends.
func Pipe(ctx context.Context, conn *Conn, from, to string, log *zap.Logger, transform Transform) error {
	writer := NewWriter(conn, to)
	return Follow(ctx, conn, from, func(ctx context.Context, in Snapshot) error {
		start := time.Now()
		out, err := transform(ctx, in)
		if err != nil {
			log.Error("transform failed; keeping the last published state",
				zap.Uint64("generation", in.Meta.Generation), zap.Error(err))
			return nil
		}
		meta := Meta{Generation: in.Meta.Generation, Trace: in.Meta.Trace.Child(), Ingest: in.Meta.Ingest}
		// Apply retries until the bus takes the whole output (an
		// incremental transform's changes are never lost), or ctx ends.
		changed, err := writer.Apply(ctx, meta, out)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			log.Error("keys left out of the table; every other key was published", zap.String("stage", to),
				zap.Uint64("generation", in.Meta.Generation), zap.Error(err))
		}
		log.Debug("published", zap.Uint64("generation", in.Meta.Generation), zap.Int("changedKeys", changed),
			zap.Bool("full", out.Full), zap.Duration("took", time.Since(start)))
		return nil
	})
}
