package translator

import (
	"context"
	"slices"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// Stage runs the translator on the bus: it follows the watcher's objects
// and publishes the model.
type Stage struct {
	conn  *bus.Conn
	cfg   Config
	log   *zap.Logger
	cache *objectCache
	// reported remembers each Ingress's problems, so they are logged when
	// they change rather than on every generation.
	reported map[string][]bus.Problem
}

// New returns the translator stage.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Stage {
	return &Stage{conn: conn, cfg: cfg, log: log, cache: newObjectCache(), reported: map[string][]bus.Problem{}}
}

// Run translates after every commit of the watcher until ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	return bus.Pipe(ctx, s.conn, bus.StageWatcher, bus.StageTranslator, s.log, s.translate)
}

func (s *Stage) translate(_ context.Context, in bus.Snapshot) (map[string][]byte, error) {
	for _, err := range s.cache.update(in.Entries, in.Changed) {
		s.log.Error("object left out", zap.Error(err))
	}
	model := Translate(s.cfg, s.cache.snapshot())
	s.report(model)
	return model.Entries()
}

func (s *Stage) report(m bus.Model) {
	seen := map[string]bool{}
	for key, info := range m.Ingresses {
		seen[key] = true
		if slices.Equal(s.reported[key], info.Problems) {
			continue
		}
		s.reported[key] = info.Problems
		for _, p := range info.Problems {
			s.log.Warn("ingress problem",
				zap.String("ingress", info.Namespace+"/"+info.Name), zap.Bool("rejected", info.Rejected),
				zap.String("field", p.Field), zap.String("reason", p.Reason), zap.String("message", p.Message))
		}
	}
	for key := range s.reported {
		if !seen[key] {
			delete(s.reported, key)
		}
	}
}
