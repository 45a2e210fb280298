// Package annotations is the stage between the translator and the renderer
// that turns each Ingress's annotations into typed features of the model.
// The plugin host arrives with its own issue; until then the stage passes
// the model through unchanged, so the seam is already on the bus.
package annotations

import (
	"context"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// Stage follows the translator's model and publishes the annotated model.
type Stage struct {
	conn *bus.Conn
	log  *zap.Logger
}

// New returns the annotations stage.
func New(conn *bus.Conn, log *zap.Logger) *Stage {
	return &Stage{conn: conn, log: log}
}

// Run annotates after every commit of the translator until ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	return bus.Pipe(ctx, s.conn, bus.StageTranslator, bus.StageAnnotations, s.log, s.annotate)
}

// annotate passes the changed keys through: no plugin is loaded yet. Each
// value is decoded first, so a producer speaking another schema is caught
// here and not in the renderer.
func (s *Stage) annotate(_ context.Context, in bus.Snapshot) (bus.Output, error) {
	out := bus.Output{Puts: map[string][]byte{}, Deletes: in.Deletes, Full: in.Full}
	for key, data := range in.Puts {
		if _, err := bus.ModelFromEntries(map[string][]byte{key: data}); err != nil {
			return bus.Output{}, err
		}
		out.Puts[key] = data
	}
	return out, nil
}
