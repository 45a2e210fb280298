package renderer

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// Stage runs the renderer on the bus: it follows the annotated model and
// publishes the rendered files and Lua payloads, rendering again only what
// a change touches.
type Stage struct {
	conn     *bus.Conn
	cfg      Config
	log      *zap.Logger
	renderer *Renderer
	splitter *fileSplitter
}

// New returns the renderer stage.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Stage {
	return &Stage{conn: conn, cfg: cfg, log: log, splitter: newFileSplitter()}
}

// Run renders after every commit of the annotations stage until ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	return bus.Pipe(ctx, s.conn, bus.StageAnnotations, bus.StageRenderer, s.log, s.render)
}

func (s *Stage) render(_ context.Context, in bus.Snapshot) (bus.Output, error) {
	full := in.Full || s.renderer == nil
	if full {
		s.renderer = NewRenderer(s.cfg)
	}
	out, errs := s.renderer.Update(in.Puts, in.Deletes)
	for _, err := range errs {
		s.log.Error("left out of the configuration", zap.Error(err))
	}
	if !s.renderer.Rendered(MainFile) {
		return bus.Output{}, errors.Join(errs...)
	}
	// A new renderer's first change is everything it renders: the whole
	// table, which replaces what an earlier run left.
	out.Full = full
	// A host with thousands of paths renders a file larger than one bus
	// message: it goes out in parts, which the applier joins.
	s.splitter.split(&out)
	return out, nil
}

// Validate checks the operator's settings before they reach nginx.conf.
func (c Config) Validate() error {
	for _, addr := range append(append([]string{}, c.HTTPListen...), c.HTTPSListen...) {
		if !listenPattern.MatchString(addr) {
			return fmt.Errorf("renderer config: listen address %q is not host:port", addr)
		}
	}
	checks := map[string]string{
		"control socket": c.ControlSocket, "modules dir": c.ModulesDir,
		"config dict size": c.ConfigDictSize, "cert dict size": c.CertDictSize,
	}
	for _, r := range c.Resolvers {
		if !resolverPattern.MatchString(r) {
			return fmt.Errorf("renderer config: resolver %q is not an IP address with an optional port", r)
		}
	}
	if c.WorkerProcesses != "" {
		checks["worker processes"] = c.WorkerProcesses
	}
	if c.User != "" {
		checks["user"], checks["group"] = c.User, c.Group
	}
	for what, v := range checks {
		if !settingPattern.MatchString(v) {
			return fmt.Errorf("renderer config: %s %q has characters not allowed in nginx.conf", what, v)
		}
	}
	return nil
}
