// Package annotations is the stage between the translator and the renderer
// that turns each Ingress's annotations into typed features of the model,
// through plugin processes (hashicorp/go-plugin). The host starts and
// supervises the plugins; the Annotator decides which Ingresses a change
// touches and sends each plugin one batch per change.
package annotations

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/pluginhost"
	"switchyard.dev/switchyard/internal/problems"
	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/builtin"
)

// Config configures the stage.
type Config struct {
	// Prefix is --annotations-prefix.
	Prefix string
	// Builtins are the built-in plugins, with what each owns; Self is the
	// binary that serves them, all in one process (`Self plugin --all`):
	// switchyard-plugins or switchyard itself.
	Builtins []plugins.Description
	Self     string
	// PluginDir holds third-party plugin binaries (--plugin-dir).
	PluginDir string
	// CallTimeout bounds one call to a plugin (default 5 s).
	CallTimeout time.Duration
	// SSLPassthrough is --enable-ssl-passthrough: ssl-passthrough takes
	// effect (otherwise it is a warning).
	SSLPassthrough bool
}

// Sources lists the plugins to start: the built-in ones, then every
// executable file in PluginDir, in name order.
func (c Config) Sources() ([]PluginSource, error) {
	var sources []PluginSource
	group := pluginhost.NewGroup(func() *exec.Cmd { return exec.Command(c.Self, "plugin", builtin.AllFlag) })
	for _, desc := range c.Builtins {
		sources = append(sources, PluginSource{Name: "builtin " + desc.Name, Known: &desc, Group: group, Command: func() *exec.Cmd {
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
	host := NewHost(HostConfig{Sources: sources, Prefix: s.cfg.Prefix, CallTimeout: s.cfg.CallTimeout, SSLPassthrough: s.cfg.SSLPassthrough}, s.log)
	owners := host.Start(ctx)
	defer host.Wait()

	r := &runner{
		newAnnotator: func() *Annotator { return host.NewAnnotator(owners) },
		problems:     problems.NewReporter(s.log),
	}
	redos := make(chan bus.Redo)
	go r.retryRecovered(ctx, host.Recovered(), redos)
	return bus.Pipe(ctx, s.conn, bus.StageTranslator, bus.StageAnnotations, s.log, r.annotate,
		bus.WithRedos(redos), bus.WithPublished(r.report))
}

// runner holds the annotator between changes; bus.Pipe runs its annotate
// and its retries in turn.
type runner struct {
	annotator    *Annotator
	newAnnotator func() *Annotator
	// started says the first output has gone out: until then every
	// output is a whole table, even when the first annotate failed.
	started bool
	// problems logs each Ingress's problems when they change (the
	// translator logs its own; these are the plugins' and the host's,
	// which nothing else logs when there is no Kubernetes API to write
	// Events to).
	problems *problems.Reporter
}

func (r *runner) annotate(ctx context.Context, in bus.Snapshot) (bus.Output, error) {
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
		return bus.Output{}, fmt.Errorf("annotate: %w", err)
	}
	if in.Full || !r.started {
		out.Full, r.started = true, true
	}
	return out, nil
}

// retryRecovered asks Pipe to annotate again the Ingresses of each plugin
// that is back after a restart.
func (r *runner) retryRecovered(ctx context.Context, recovered <-chan string, redos chan<- bus.Redo) {
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-recovered:
			redo := func(ctx context.Context) (*bus.Output, error) {
				if !r.started {
					return nil, nil // the first annotate asks every plugin anyway
				}
				out, err := r.annotator.Retry(ctx, name)
				if err != nil {
					return nil, fmt.Errorf("re-annotate after plugin %s restarted: %w", name, err)
				}
				return &out, nil
			}
			select {
			case redos <- redo:
			case <-ctx.Done():
				return
			}
		}
	}
}

// problemsField is in the JSON of every info with problems (IngressInfo's
// Problems is omitempty); a value that holds it by chance is decoded.
var problemsField = []byte(`"problems":`)

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
		if !bytes.Contains(data, problemsField) {
			// No problems (most infos): what Report would make of it,
			// without decoding each of a start's 10,000 infos.
			r.problems.Forget(key)
			continue
		}
		var info bus.IngressInfo
		if json.Unmarshal(data, &info) == nil {
			r.problems.Report(key, &info)
		}
	}
}
