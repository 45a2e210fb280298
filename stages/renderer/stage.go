package renderer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// Stage runs the renderer on the bus: it follows the annotated model and
// the applier's refusals, and publishes the rendered files and Lua
// payloads, rendering again only what a change touches.
type Stage struct {
	conn *bus.Conn
	cfg  Config
	log  *zap.Logger

	// Used only by what bus.Pipe runs, in turn: render and the redos
	// the refusals bring.
	renderer *Renderer
	// refusals are the applier's, by table key: a new renderer starts
	// with them.
	refusals map[string]*bus.Refusal
	splitter *fileSplitter
}

// New returns the renderer stage.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Stage {
	return &Stage{conn: conn, cfg: cfg, log: log, splitter: newFileSplitter(), refusals: map[string]*bus.Refusal{}}
}

// Run renders after every commit of the annotations stage, and again after
// every change of the applier's refusals, until ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	if err := s.cfg.Validate(); err != nil {
		return err
	}
	if len(s.cfg.TestRefuseIngresses) > 0 {
		s.log.Warn("test option: these Ingresses get a directive NGINX refuses", zap.Strings("ingresses", s.cfg.TestRefuseIngresses))
	}
	redos := make(chan bus.Redo)
	go func() {
		err := bus.Follow(ctx, s.conn, bus.TableRefusals, func(ctx context.Context, snap bus.Snapshot) error {
			select {
			case redos <- func(context.Context) (*bus.Output, error) { return s.applyRefusals(snap), nil }:
			case <-ctx.Done():
			}
			return nil
		})
		if err != nil && ctx.Err() == nil {
			s.log.Error("following the applier's refusals stopped", zap.Error(err))
		}
	}()
	return bus.Pipe(ctx, s.conn, bus.StageAnnotations, bus.StageRenderer, s.log, s.render, bus.WithRedos(redos))
}

// applyRefusals takes a change of the applier's refusals and renders again
// what it leaves out or brings back; nil before the first model render,
// which takes them.
func (s *Stage) applyRefusals(in bus.Snapshot) *bus.Output {
	if in.Full {
		for key := range s.refusals {
			s.setRefusal(key, nil)
		}
	}
	for _, key := range in.Deletes {
		s.setRefusal(key, nil)
	}
	for key, data := range in.Puts {
		var ref bus.Refusal
		if err := json.Unmarshal(data, &ref); err != nil {
			s.log.Error("refusal not understood; ignored", zap.String("key", key), zap.Error(err))
			continue
		}
		s.setRefusal(key, &ref)
	}
	if s.renderer == nil || !s.renderer.Rendered(MainFile) {
		return nil
	}
	out, errs := s.renderer.Flush()
	for _, err := range errs {
		var w passthroughWarning
		if errors.As(err, &w) {
			s.log.Warn("TLS passthrough", zap.Error(err))
			continue
		}
		s.log.Error("left out of the configuration", zap.Error(err))
	}
	s.splitter.split(&out)
	return &out
}

func (s *Stage) setRefusal(key string, ref *bus.Refusal) {
	if ref == nil {
		delete(s.refusals, key)
	} else {
		s.refusals[key] = ref
	}
	if s.renderer != nil {
		s.renderer.SetRefusal(key, ref)
	}
}

func (s *Stage) render(_ context.Context, in bus.Snapshot) (bus.Output, error) {
	full := in.Full || s.renderer == nil
	if full {
		s.renderer = NewRenderer(s.cfg)
		for key, ref := range s.refusals {
			s.renderer.SetRefusal(key, ref)
		}
	}
	out, errs := s.renderer.Update(in.Puts, in.Deletes)
	for _, err := range errs {
		var w passthroughWarning
		if errors.As(err, &w) {
			s.log.Warn("TLS passthrough", zap.Error(err))
			continue
		}
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
	checks := map[string]string{
		"modules dir": c.ModulesDir, "config dict size": c.ConfigDictSize, "cert dict size": c.CertDictSize,
	}
	for _, name := range c.TestRefuseIngresses {
		if !bus.SourceNamePattern.MatchString(name) {
			return fmt.Errorf("renderer config: test refuse ingress %q is not namespace/name", name)
		}
	}
	for _, r := range c.Resolvers {
		if !resolverPattern.MatchString(r) {
			return fmt.Errorf("renderer config: resolver %q is not an IP address with an optional port", r)
		}
	}
	if c.MetricsDictSize != "" {
		checks["metrics dict size"] = c.MetricsDictSize
	}
	if _, err := c.MetricsBuckets.luaInit(); err != nil {
		return fmt.Errorf("renderer config: %w", err)
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
