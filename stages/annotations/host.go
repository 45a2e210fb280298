package annotations

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/zap"

	"switchyard.dev/switchyard/internal/pluginhost"
	"switchyard.dev/switchyard/internal/telemetry"
	"switchyard.dev/switchyard/plugins"
)

// PluginSource is how to start one plugin process.
type PluginSource struct {
	// Name is where the plugin comes from, for logs: "builtin canary" or a
	// path in --plugin-dir.
	Name    string
	Command func() *exec.Cmd
	// Known is what a built-in plugin owns, known without starting it: if
	// its process cannot start, its annotations still have an owner, and
	// the Ingresses using them fail closed instead of being served as if
	// the annotations were not there (an auth annotation ignored is an
	// open door). Nil for third-party plugins.
	Known *plugins.Description
	// Group, when set, is the process that serves this plugin with others
	// (the built-ins): Command is not used, the group's process is.
	Group *pluginhost.Group
}

// HostConfig configures the plugin host.
type HostConfig struct {
	Sources []PluginSource
	// Prefix is the annotation prefix keys without a "/" are relative to.
	Prefix string
	// CallTimeout bounds one Apply call.
	CallTimeout time.Duration
	// HealthInterval is how often a plugin is pinged.
	HealthInterval time.Duration
	// MaxBackoff caps the wait between restarts of a failing plugin.
	MaxBackoff time.Duration
	// SSLPassthrough is --enable-ssl-passthrough, for the annotators.
	SSLPassthrough bool
}

// ErrPluginDown is returned for a call to a plugin that is not running.
var ErrPluginDown = errors.New("plugin is not running")

// Host runs the plugin processes: it starts them, learns what each owns,
// pings them, restarts a crashed one with backoff, and bounds every call.
type Host struct {
	cfg     HostConfig
	log     *zap.Logger
	plugins []*hosted
	// recovered receives a plugin's name each time it comes back after a
	// failure, so that what failed closed meanwhile is applied again.
	recovered chan string
	wg        sync.WaitGroup
}

// hosted is one plugin as the host knows it.
type hosted struct {
	source PluginSource
	desc   plugins.Description
	// keys maps every full annotation key it owns (aliases too) to its spec.
	keys map[string]*ownedKey

	mu     sync.Mutex
	client *pluginhost.Client // nil while down
	// startErr is why the first start failed, if it did.
	startErr error
}

// ownedKey is one annotation key with its compiled pattern.
type ownedKey struct {
	plugin  *hosted
	spec    plugins.Annotation
	full    string // the full key of spec.Key
	pattern *regexp.Regexp
}

// NewHost returns a host; Start launches the plugins.
func NewHost(cfg HostConfig, log *zap.Logger) *Host {
	if cfg.CallTimeout == 0 {
		cfg.CallTimeout = 5 * time.Second
	}
	if cfg.HealthInterval == 0 {
		cfg.HealthInterval = time.Second
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = 5 * time.Second
	}
	return &Host{cfg: cfg, log: log, recovered: make(chan string, 16)}
}

// Start launches every plugin and supervises it until ctx ends. A plugin
// that cannot start, or that claims a key another plugin already owns, is
// refused with an error in the log; the others run. It returns the owner
// of every key.
func (h *Host) Start(ctx context.Context) map[string]*ownedKey {
	owners := map[string]*ownedKey{}
	names := map[string]string{}
	for i, p := range h.launchAll(ctx) {
		src := h.cfg.Sources[i]
		if p.client == nil {
			if src.Known == nil {
				h.log.Error("plugin refused", zap.String("plugin", src.Name), zap.Error(p.startErr))
				continue
			}
			h.log.Error("built-in plugin did not start; its annotations fail closed until it does",
				zap.String("plugin", src.Name), zap.Error(p.startErr))
			p.desc = *src.Known
		}
		if err := h.claim(p, owners, names); err != nil {
			p.stop()
			h.log.Error("plugin refused", zap.String("plugin", src.Name), zap.Error(err))
			continue
		}
		h.plugins = append(h.plugins, p)
		if p.client != nil {
			h.log.Info("plugin started", zap.String("plugin", p.desc.Name), zap.String("source", src.Name),
				zap.Int("annotations", len(p.desc.Annotations)), zap.Int("pid", p.client.Pid()))
		}
	}
	for _, p := range h.plugins {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			h.supervise(ctx, p)
		}()
	}
	return owners
}

// launchAll starts every plugin at once (each start is a process and a
// handshake; one after another they would add up at start-up) and returns
// them in the order of the sources, so ownership is decided in that order.
func (h *Host) launchAll(ctx context.Context) []*hosted {
	all := make([]*hosted, len(h.cfg.Sources))
	var wg sync.WaitGroup
	for i, src := range h.cfg.Sources {
		all[i] = &hosted{source: src}
		wg.Add(1)
		go func() {
			defer wg.Done()
			all[i].startErr = h.launch(ctx, all[i])
		}()
	}
	wg.Wait()
	return all
}

// claim records p's keys, refusing a name or key that is taken.
func (h *Host) claim(p *hosted, owners map[string]*ownedKey, names map[string]string) error {
	if p.desc.Name == "" {
		return errors.New("plugin describes itself without a name")
	}
	if other, taken := names[p.desc.Name]; taken {
		return fmt.Errorf("plugin name %q is already used by %s", p.desc.Name, other)
	}
	keys, err := h.compileKeys(p)
	if err != nil {
		return err
	}
	for full := range keys {
		if other, taken := owners[full]; taken {
			return fmt.Errorf("plugin %s claims annotation %s, which plugin %s already owns", p.desc.Name, full, other.plugin.desc.Name)
		}
	}
	for full, k := range keys {
		owners[full] = k
	}
	p.keys = keys
	names[p.desc.Name] = p.source.Name
	return nil
}

// validKey is a plugin's annotation key (relative or with a DNS prefix).
var validKey = regexp.MustCompile(`^([a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$`)

func (h *Host) compileKeys(p *hosted) (map[string]*ownedKey, error) {
	keys := map[string]*ownedKey{}
	for _, spec := range p.desc.Annotations {
		pattern, err := regexp.Compile(`^(?:` + spec.Pattern + `)$`)
		if err != nil {
			return nil, fmt.Errorf("plugin %s annotation %s: pattern: %w", p.desc.Name, spec.Key, err)
		}
		if spec.Risk < plugins.RiskLow || spec.Risk > plugins.RiskCritical {
			return nil, fmt.Errorf("plugin %s annotation %s: no risk level", p.desc.Name, spec.Key)
		}
		k := &ownedKey{plugin: p, spec: spec, full: h.fullKey(spec.Key), pattern: pattern}
		for _, name := range append([]string{spec.Key}, spec.Aliases...) {
			if !validKey.MatchString(name) {
				return nil, fmt.Errorf("plugin %s: %q is not an annotation key", p.desc.Name, name)
			}
			full := h.fullKey(name)
			if _, dup := keys[full]; dup {
				return nil, fmt.Errorf("plugin %s lists annotation %s twice", p.desc.Name, full)
			}
			keys[full] = k
		}
	}
	return keys, nil
}

func (h *Host) fullKey(key string) string {
	if strings.Contains(key, "/") {
		return key
	}
	return h.cfg.Prefix + "/" + key
}

// launch starts p's process (or its group's, if not running) and asks
// what it owns.
func (h *Host) launch(ctx context.Context, p *hosted) error {
	var client *pluginhost.Client
	var err error
	if g := p.source.Group; g != nil && p.source.Known != nil {
		client, err = g.Client(p.source.Known.Name, h.pluginLogger("builtin"))
	} else {
		client, err = pluginhost.Launch(p.source.Command(), h.pluginLogger(p.source.Name))
	}
	if err != nil {
		return err
	}
	callCtx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	desc, err := client.Describe(callCtx)
	if err != nil {
		client.Kill()
		return fmt.Errorf("describe: %w", err)
	}
	if known := p.source.Known; known != nil && !sameKeys(*known, desc) {
		// A built-in served by a switchyard-plugins binary of another
		// build: what fails closed while it is down would not be what it
		// owns, so it is refused, and its annotations fail closed.
		client.Kill()
		return fmt.Errorf("built-in plugin %s describes other annotations than this switchyard binary knows: "+
			"rebuild switchyard-plugins together with switchyard", desc.Name)
	}
	if p.keys != nil && !sameKeys(p.desc, desc) {
		// A restarted binary was replaced by one owning other keys; the
		// ownership checks ran on the old one, so refuse it.
		client.Kill()
		return fmt.Errorf("plugin %s came back owning other annotations than before", desc.Name)
	}
	p.mu.Lock()
	p.desc, p.client = desc, client
	p.mu.Unlock()
	return nil
}

func sameKeys(a, b plugins.Description) bool {
	key := func(x plugins.Annotation) string {
		return x.Key + "\x00" + x.Pattern + "\x00" + strings.Join(x.Aliases, ",")
	}
	ka, kb := make([]string, 0, len(a.Annotations)), make([]string, 0, len(b.Annotations))
	for _, x := range a.Annotations {
		ka = append(ka, key(x))
	}
	for _, x := range b.Annotations {
		kb = append(kb, key(x))
	}
	slices.Sort(ka)
	slices.Sort(kb)
	return a.Name == b.Name && slices.Equal(ka, kb)
}

// supervise pings p and restarts it when it stops answering, waiting
// longer after each failed start, up to MaxBackoff.
func (h *Host) supervise(ctx context.Context, p *hosted) {
	defer p.stop()
	backoff := 100 * time.Millisecond
	tick := time.NewTicker(h.cfg.HealthInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if p.healthy() {
			backoff = 100 * time.Millisecond
			continue
		}
		p.stop()
		h.log.Warn("plugin is down; its Ingresses fail closed until it is back", zap.String("plugin", p.desc.Name))
		for ctx.Err() == nil {
			err := h.launch(ctx, p)
			if err == nil {
				h.log.Info("plugin restarted", zap.String("plugin", p.desc.Name), zap.Int("pid", p.client.Pid()))
				telemetry.Get().PluginRestart(p.desc.Name)
				select {
				case h.recovered <- p.desc.Name:
				default:
				}
				break
			}
			h.log.Error("plugin restart failed", zap.String("plugin", p.desc.Name), zap.Duration("retryIn", backoff), zap.Error(err))
			select {
			case <-ctx.Done():
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, h.cfg.MaxBackoff)
		}
	}
}

// healthy reports whether p's process runs and answers a ping.
func (p *hosted) healthy() bool {
	p.mu.Lock()
	client := p.client
	p.mu.Unlock()
	return client != nil && !client.Exited() && client.Ping() == nil
}

// stop kills p's process, if any; the supervisor starts a new one at its
// next tick unless the host is stopping.
func (p *hosted) stop() {
	p.mu.Lock()
	client := p.client
	p.client = nil
	p.mu.Unlock()
	if client != nil {
		client.Kill()
	}
}

// apply calls p with one batch, bounded by the host's call timeout.
func (h *Host) apply(ctx context.Context, p *hosted, batch []plugins.Ingress) ([]plugins.Result, error) {
	p.mu.Lock()
	client := p.client
	p.mu.Unlock()
	if client == nil {
		return nil, ErrPluginDown
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.CallTimeout)
	defer cancel()
	start := time.Now()
	results, err := client.Apply(ctx, batch)
	telemetry.Get().PluginCall(p.desc.Name, time.Since(start), err != nil)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", p.desc.Name, err)
	}
	return results, nil
}

// NewAnnotator returns an Annotator that calls this host's plugins; owners
// is what Start returned. The stage uses it, and so do benchmarks that time
// the Annotator with real plugin processes.
func (h *Host) NewAnnotator(owners map[string]*ownedKey) *Annotator {
	a := NewAnnotator(owners, h.cfg.Prefix, h.apply)
	a.passthrough = h.cfg.SSLPassthrough
	return a
}

// Recovered delivers the name of each plugin that came back.
func (h *Host) Recovered() <-chan string { return h.recovered }

// Wait returns once every supervisor has stopped its plugin (after the
// context given to Start ended).
func (h *Host) Wait() { h.wg.Wait() }

// Plugins returns the descriptions of the running plugins, in load order.
func (h *Host) Plugins() []plugins.Description {
	out := make([]plugins.Description, len(h.plugins))
	for i, p := range h.plugins {
		out[i] = p.desc
	}
	return out
}

// pluginLogger passes what a plugin writes to stderr to the stage's log.
func (h *Host) pluginLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "plugin",
		Level:  hclog.Warn,
		Output: zapWriter{h.log.With(zap.String("plugin", name))},
	})
}

// zapWriter turns the lines go-plugin logs into zap entries.
type zapWriter struct{ log *zap.Logger }

var _ io.Writer = zapWriter{}

func (w zapWriter) Write(b []byte) (int, error) {
	w.log.Warn(strings.TrimSpace(string(b)))
	return len(b), nil
}
