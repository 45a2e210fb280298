// Package annotations is the stage between the translator and the renderer
// that turns each Ingress's annotations into typed features of the model,
// through plugin processes (hashicorp/go-plugin). The host starts and
// supervises the plugins; the Annotator decides which Ingresses a change
// touches and sends each plugin one batch per change.
package annotations

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/problems"
	"switchyard.dev/switchyard/plugins"
)

// Config configures the stage.
type Config struct {
	// Prefix is --annotations-prefix.
	Prefix string
	// Builtins are the built-in plugins, with what each owns; Self is the
	// binary that serves them (`Self plugin NAME`): switchyard-plugins or
	// switchyard itself.
	Builtins []plugins.Description
	Self     string
	// PluginDir holds third-party plugin binaries (--plugin-dir).
	PluginDir string
	// CallTimeout bounds one call to a plugin (default 5 s).
	CallTimeout time.Duration
}

// Sources lists the plugins to start: the built-in ones, then every
// executable file in PluginDir, in name order.
func (c Config) Sources() ([]PluginSource, error) {
	var sources []PluginSource
	for _, desc := range c.Builtins {
		sources = append(sources, PluginSource{Name: "builtin " + desc.Name, Known: &desc, Command: func() *exec.Cmd {
			return exec.Command(c.Self, "plugin", desc.Name)
		}})
	}
	if c.PluginDir == "" {
		return sources, nil
	}
	entries, err := os.ReadDir(c.PluginDir)
	if err != nil {
		return nil, fmt.Errorf("plugin dir: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(c.PluginDir, e.Name())
		info, err := os.Stat(path)
		if err != nil || !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			continue
		}
		sources = append(sources, PluginSource{Name: path, Command: func() *exec.Cmd { return exec.Command(path) }})
	}
	return sources, nil
}

// Stage follows the translator's model and publishes the annotated model.
type Stage struct {
	conn *bus.Conn
	cfg  Config
	log  *zap.Logger
}

// New returns the annotations stage.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Stage {
	if cfg.Prefix == "" {
		cfg.Prefix = bus.DefaultAnnotationsPrefix
	}
	return &Stage{conn: conn, cfg: cfg, log: log}
}

// Run starts the plugins and annotates after every commit of the
// translator until ctx ends; then it stops the plugins.
func (s *Stage) Run(ctx context.Context) error {
	sources, err := s.cfg.Sources()
	if err != nil {
		return err
	}
	host := NewHost(HostConfig{Sources: sources, Prefix: s.cfg.Prefix, CallTimeout: s.cfg.CallTimeout}, s.log)
	owners := host.Start(ctx)
	defer host.Wait()

	r := &runner{
		newAnnotator: func() *Annotator { return host.NewAnnotator(owners) },
		writer:       bus.NewWriter(s.conn, bus.StageAnnotations),
		log:          s.log,
		problems:     problems.NewReporter(s.log),
	}
	go r.retryRecovered(ctx, host.Recovered())
	return bus.Follow(ctx, s.conn, bus.StageTranslator, r.follow)
}

// runner publishes the annotator's output; the follow callback and the
// retries after a plugin restart take turns.
type runner struct {
	mu           sync.Mutex
	annotator    *Annotator
	newAnnotator func() *Annotator
	writer       *bus.Writer
	log          *zap.Logger
	last         bus.Meta
	started      bool
	// problems logs each Ingress's problems when they change (the
	// translator logs its own; these are the plugins' and the host's,
	// which nothing else logs when there is no Kubernetes API to write
	// Events to).
	problems *problems.Reporter
}

func (r *runner) follow(ctx context.Context, in bus.Snapshot) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := time.Now()
	if in.Full || r.annotator == nil {
		// The whole table: start over, and publish a whole table, which
		// also deletes whatever an earlier run left.
		r.annotator = r.newAnnotator()
	}
	values := make(map[string][]byte, len(in.Puts)+len(in.Deletes))
	for _, key := range in.Deletes {
		values[key] = nil
	}
	for key, data := range in.Puts {
		values[key] = data
	}
	out, err := r.annotator.Update(ctx, values)
	if err != nil {
		r.log.Error("annotate failed; keeping the last published state", zap.Uint64("generation", in.Meta.Generation), zap.Error(err))
		return nil
	}
	if in.Full || !r.started {
		out.Full, r.started = true, true
	}
	r.last = in.Meta
	r.publish(ctx, in.Meta, out, start)
	return nil
}

func (r *runner) retryRecovered(ctx context.Context, recovered <-chan string) {
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-recovered:
			r.mu.Lock()
			if r.started {
				start := time.Now()
				out, err := r.annotator.Retry(ctx, name)
				if err != nil {
					r.log.Error("re-annotate after plugin restart failed", zap.String("plugin", name), zap.Error(err))
				} else {
					r.publish(ctx, r.last, out, start)
				}
			}
			r.mu.Unlock()
		}
	}
}

func (r *runner) publish(ctx context.Context, in bus.Meta, out bus.Output, start time.Time) {
	meta := bus.Meta{Generation: in.Generation, Trace: in.Trace.Child(), Ingest: in.Ingest}
	// Apply retries until the bus takes the output, or ctx ends.
	changed, err := r.writer.Apply(ctx, meta, out)
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		r.log.Error("keys left out of the table; every other key was published", zap.Uint64("generation", in.Generation), zap.Error(err))
	}
	r.report(out)
	r.log.Debug("published", zap.Uint64("generation", in.Generation), zap.Int("changedKeys", changed),
		zap.Int("puts", len(out.Puts)), zap.Int("deletes", len(out.Deletes)), zap.Duration("took", time.Since(start)))
}

// report logs the problems of each Ingress info in out whose problems
// changed.
func (r *runner) report(out bus.Output) {
	for _, key := range out.Deletes {
		r.problems.Forget(key)
	}
	for key, data := range out.Puts {
		kind, _, err := bus.SplitKey(key)
		if err != nil || kind != bus.KindIngress {
			continue
		}
		var info bus.IngressInfo
		if json.Unmarshal(data, &info) == nil {
			r.problems.Report(key, &info)
		}
	}
}
