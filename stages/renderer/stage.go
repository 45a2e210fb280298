package renderer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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

	// mu makes the two inputs take turns.
	mu       sync.Mutex
	renderer *Renderer
	writer   *bus.Writer
	last     bus.Meta // of the last annotations commit rendered
	// refusals are the applier's, by table key: a new renderer starts
	// with them.
	refusals map[string]*bus.Refusal
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
	if len(s.cfg.TestRefuseIngresses) > 0 {
		s.log.Warn("test option: these Ingresses get a directive NGINX refuses", zap.Strings("ingresses", s.cfg.TestRefuseIngresses))
	}
	s.writer = bus.NewWriter(s.conn, bus.StageRenderer)
	s.refusals = map[string]*bus.Refusal{}
	// Two inputs: the annotated model, and the applier's refusals.
	done := make(chan error, 2)
	go func() { done <- bus.Follow(ctx, s.conn, bus.TableRefusals, s.followRefusals) }()
	go func() { done <- bus.Follow(ctx, s.conn, bus.StageAnnotations, s.followModel) }()
	for range 2 {
		if err := <-done; err != nil {
			return fmt.Errorf("renderer: %w", err)
		}
	}
	return nil
}

func (s *Stage) followModel(ctx context.Context, in bus.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
	out, err := s.render(in)
	if err != nil {
		s.log.Error("transform failed; keeping the last published state",
			zap.Uint64("generation", in.Meta.Generation), zap.Error(err))
		return nil
	}
	s.last = in.Meta
	s.publish(ctx, out, start)
	return nil
}

// followRefusals renders again when the applier refuses a source or
// forgets a refusal: the refused source is left out, or back.
func (s *Stage) followRefusals(ctx context.Context, in bus.Snapshot) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	start := time.Now()
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
		return nil // the first model render takes them
	}
	out, errs := s.renderer.Flush()
	for _, err := range errs {
		s.log.Error("left out of the configuration", zap.Error(err))
	}
	s.publish(ctx, out, start)
	return nil
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

func (s *Stage) publish(ctx context.Context, out bus.Output, start time.Time) {
	// A host with thousands of paths renders a file larger than one bus
	// message: it goes out in parts, which the applier joins.
	s.splitter.split(&out)
	meta := bus.Meta{Generation: s.last.Generation, Trace: s.last.Trace.Child(), Ingest: s.last.Ingest}
	// Apply retries until the bus takes the whole output, or ctx ends.
	changed, err := s.writer.Apply(ctx, meta, out)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		s.log.Error("keys left out of the table; every other key was published",
			zap.Uint64("generation", meta.Generation), zap.Error(err))
	}
	s.log.Debug("published", zap.Uint64("generation", meta.Generation), zap.Int("changedKeys", changed),
		zap.Bool("full", out.Full), zap.Duration("took", time.Since(start)))
}

func (s *Stage) render(in bus.Snapshot) (bus.Output, error) {
	full := in.Full || s.renderer == nil
	if full {
		s.renderer = NewRenderer(s.cfg)
		for key, ref := range s.refusals {
			s.renderer.SetRefusal(key, ref)
		}
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
