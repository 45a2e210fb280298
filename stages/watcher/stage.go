// Package watcher is the pipeline's source: it reads Kubernetes objects
// (from a manifests directory, or later the API server) and publishes each
// one under its own key, with a new generation for every change.
package watcher

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// Config of the watcher.
type Config struct {
	// ManifestsDir is a directory of YAML files of Kubernetes objects.
	ManifestsDir string
}

// Stage runs the watcher.
type Stage struct {
	conn *bus.Conn
	cfg  Config
	log  *zap.Logger
}

// New returns the watcher stage.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Stage {
	return &Stage{conn: conn, cfg: cfg, log: log}
}

// Run publishes the object set after every change until ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	if s.cfg.ManifestsDir == "" {
		return fmt.Errorf("watcher: no source configured (--manifests DIR)")
	}
	writer := bus.NewWriter(s.conn, bus.StageWatcher)
	generation, err := writer.Load(ctx)
	if err != nil {
		return fmt.Errorf("watcher: %w", err)
	}
	changes := make(chan map[string][]byte, 1)
	sourceErr := make(chan error, 1)
	go func() { sourceErr <- NewManifestSource(s.cfg.ManifestsDir, s.log).Run(ctx, changes) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-sourceErr:
			if err != nil && ctx.Err() == nil {
				return fmt.Errorf("watcher: %w", err)
			}
			return nil
		case objects := <-changes:
			generation++
			meta := bus.Meta{Generation: generation, Trace: bus.NewTrace(), Ingest: time.Now()}
			changed, err := writer.Publish(ctx, meta, objects)
			if err != nil {
				if ctx.Err() != nil {
					return nil
				}
				s.log.Error("publish objects", zap.Uint64("generation", generation), zap.Error(err))
				continue
			}
			s.log.Info("objects published", zap.Uint64("generation", generation),
				zap.Int("objects", len(objects)), zap.Int("changed", changed))
		}
	}
}
