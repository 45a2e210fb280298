// Package applier is the only code that touches NGINX: it writes and tests
// the configuration, starts, reloads and stops NGINX, and posts backends and
// certificates to the Lua configuration endpoint. The mechanics of the
// prefix, the files and the process are in internal/nginx; what to do and
// when is decided here (plan.go, reload.go).
package applier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	otelattr "go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/nginx"
	"switchyard.dev/switchyard/internal/telemetry"
)

// Config of the applier.
type Config struct {
	NginxBinary string
	// Prefix is NGINX's prefix directory (-p), created if missing.
	Prefix string
	// Local is this data plane's own: the addresses NGINX listens on and
	// its unix sockets (the Lua configuration endpoint's, and TLS
	// passthrough's, whose directory is made private to the workers'
	// user). It is filled into the rendered files, which hold placeholders
	// for it, so appliers on one host each run on their own.
	Local nginx.Local
	// ShutdownGrace bounds the graceful stop.
	ShutdownGrace time.Duration
	// WorkerUser, when set, is the user NGINX workers run as (the renderer
	// writes the same into nginx.conf); it is given the temporary dirs.
	WorkerUser *nginx.WorkerUser
	// MinReloadInterval spaces reloads: a change that needs one within this
	// time of the last reload waits, together with every change after it,
	// until changes stop for 100 ms (reloadQuiet) or the interval is over,
	// while its dynamic part (endpoints, certificates) is pushed at once.
	// The first change of a quiet period reloads at once. Zero means
	// DefaultMinReloadInterval; a negative value never holds a reload back.
	MinReloadInterval time.Duration
	// FullBackendPosts sends every backend on every change instead of
	// the ones that changed (a delta): for comparing the two in benchmarks.
	FullBackendPosts bool
	// OCSPRetryMin and OCSPRetryMax bound the backoff after a failed OCSP
	// fetch (enable-ocsp, ocsp.go); zero means 10s and 10m.
	OCSPRetryMin, OCSPRetryMax time.Duration
}

// reloadTimeout bounds the wait for NGINX to run a new configuration:
// the master parses it first, which takes seconds for thousands of
// servers on a loaded machine.
const reloadTimeout = 2 * time.Minute

// DefaultMinReloadInterval bounds a burst of Ingress changes to about one
// reload a second; every reload starts a generation of workers and drains
// the old one.
const DefaultMinReloadInterval = time.Second

// reloadQuiet is how long a change that must wait for its reload waits when
// no other change follows it: the burst it might start has not come.
const reloadQuiet = 100 * time.Millisecond

// Stage runs the applier.
type Stage struct {
	conn    *bus.Conn
	cfg     Config
	log     *zap.Logger
	control *controlClient
	// ocsp fetches the OCSP responses the certificates push carries.
	ocsp *stapler
	// passthrough keeps the TLS passthrough hosts' endpoint files.
	passthrough *passthroughFiles

	nginx *nginx.Process
	// lastReload is when NGINX last reloaded (or started).
	lastReload time.Time
	// backendsVersion is the version the Lua endpoint answered to the last
	// successful backends post; zero when the applier cannot be sure what
	// the data plane holds, which makes the next push a full one.
	backendsVersion uint64
	// routesVersion is the same for the routes of Lua-routed hosts.
	routesVersion uint64
	running       struct {
		files        map[string]string
		backends     namedValues
		certificates map[string]luaCertificate
		routes       map[string]json.RawMessage
	}
	// liveFiles are the files in NGINX's live configuration directory:
	// running.files unless a reload NGINX refused left newer ones there.
	liveFiles map[string]string
	// refusals are the sources NGINX refused (refusals.go), published in
	// the refusals table for the renderer and the status writer.
	refusals          map[string]bus.Refusal
	refusalWriter     *bus.Writer
	refusalsPublished bool
}

// New returns the applier stage.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Stage {
	if cfg.ShutdownGrace == 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	return &Stage{conn: conn, cfg: cfg, log: log, control: newControlClient(cfg.Local.ControlSocket),
		ocsp:        newStapler(log.Named("ocsp"), cfg.OCSPRetryMin, cfg.OCSPRetryMax),
		passthrough: &passthroughFiles{dir: cfg.Local.PassthroughDir},
		refusals:    map[string]bus.Refusal{}, refusalWriter: bus.NewWriter(conn, bus.TableRefusals)}
}

// target is the newest desired state with the generation it belongs to.
type target struct {
	desired desiredState
	meta    bus.Meta
	// refused says why the state is not applied (the last good one keeps
	// running); the result reports it.
	refused error
}

// errNoMainFile refuses a renderer table without nginx.conf: NGINX cannot
// run without it, and what else the table holds may belong to another
// configuration than the one running.
var errNoMainFile = fmt.Errorf("the renderer's table has no %s; keeping the last good configuration", nginx.MainFile)

// Run applies every rendered generation until ctx ends, then stops NGINX
// gracefully.
func (s *Stage) Run(ctx context.Context) error {
	if err := s.cfg.Local.Validate(); err != nil {
		return fmt.Errorf("applier: %w", err)
	}
	if err := nginx.PreparePrefix(s.cfg.Prefix); err != nil {
		return err
	}
	if err := nginx.SecureControlDir(s.cfg.Prefix, s.cfg.Local.ControlSocket); err != nil {
		return err
	}
	// The stream keeps the last apply result, so a status writer that
	// starts leading later still learns what has been applied.
	if _, err := s.conn.EnsureStream(ctx, bus.StageApplier); err != nil {
		return err
	}
	if err := s.loadRefusals(ctx); err != nil {
		return err
	}
	if s.cfg.WorkerUser != nil {
		if err := nginx.GrantWorkerAccess(s.cfg.Prefix, *s.cfg.WorkerUser); err != nil {
			return err
		}
	}
	for _, socket := range s.cfg.Local.InternalSockets() {
		if err := nginx.SecureInternalDir(filepath.Dir(socket), s.cfg.WorkerUser); err != nil {
			return err
		}
	}
	inbox := newMailbox()
	followErr := make(chan error, 1)
	go func() {
		table := newDesiredTable(s.cfg.Local.Localize)
		followErr <- bus.Follow(ctx, s.conn, bus.StageRenderer, func(_ context.Context, snap bus.Snapshot) error {
			if err := table.update(snap); err != nil {
				// Never apply a state this stage did not fully understand;
				// the renderer's next value for the key clears it.
				s.log.Error("renderer output not understood; keeping the running state",
					zap.Uint64("generation", snap.Meta.Generation), zap.Error(err))
				return nil
			}
			d := table.snapshot()
			if _, ok := d.Files[nginx.MainFile]; !ok {
				inbox.put(target{meta: snap.Meta, refused: errNoMainFile})
				return nil
			}
			inbox.put(target{desired: d, meta: snap.Meta})
			return nil
		})
	}()
	defer s.stopNginx()
	go s.ocsp.run(ctx)

	var current *target
	var retry, reloadSlot, staplesRetry <-chan time.Time
	reloadNow := false // the reload slot came: reload whatever the interval says
	backoff := bus.NewBackoff(100*time.Millisecond, 5*time.Second)
	probe := time.NewTicker(heldPortProbeInterval)
	defer probe.Stop()
	for {
		var nginxDone <-chan struct{}
		if s.nginx != nil {
			nginxDone = s.nginx.Done()
		}
		select {
		case <-ctx.Done():
			return nil
		case err := <-followErr:
			if err != nil {
				return fmt.Errorf("applier: follow renderer: %w", err)
			}
			return nil
		case <-inbox.ready:
			t := inbox.take()
			if t.refused != nil {
				s.refuse(t)
				continue
			}
			current = &t
		case <-nginxDone:
			s.log.Error("nginx exited unexpectedly; restarting it", zap.Error(s.nginx.Err()))
			s.nginx.ReapOrphans()
			s.nginx = nil
			if current == nil {
				continue
			}
		case <-retry:
		case <-reloadSlot:
			reloadSlot, reloadNow = nil, true
		case <-s.ocsp.Changed():
			staplesRetry = s.pushStaples(ctx)
			continue
		case <-staplesRetry:
			staplesRetry = s.pushStaples(ctx)
			continue
		case <-probe.C:
			if current != nil && s.hasHeldPorts() {
				s.freeHeldPorts(ctx, current.meta)
			}
			continue
		}
		if current == nil {
			continue
		}
		start := time.Now()
		result := s.apply(ctx, current.desired, current.meta, reloadNow)
		reloadNow = false
		out := current.meta.Trace.Child()
		s.publishResult(current.meta, out, result)
		bus.RecordStageSpan(ctx, bus.StageApplier, current.meta, out, start, resultError(result),
			otelattr.Bool("switchyard.reloaded", result.Reloaded), otelattr.Bool("switchyard.dynamic_updated", result.DynamicUpdated),
			otelattr.Bool("switchyard.reload_pending", result.ReloadPending))
		if result.ReloadPending {
			// Each change that waits pushes the slot back (decideReload),
			// timed from the end of this apply.
			reloadSlot = time.After(decideReload(s.reloadInput(false, false)).Slot)
		}
		if result.Error != "" {
			retry = time.After(backoff.Next())
		} else {
			retry = nil
			backoff.Reset()
		}
	}
}

// apply brings NGINX to the desired state. The static part is swapped in
// only after nginx -t passes; otherwise the last good configuration keeps
// running and the dynamic part is still pushed, so endpoint changes flow
// even while a bad configuration waits to be fixed.
func (s *Stage) apply(ctx context.Context, d desiredState, meta bus.Meta, reloadNow bool) bus.ApplyResult {
	res := bus.ApplyResult{Generation: meta.Generation}
	var errs []error
	fresh := s.nginx == nil
	plan := decide(s.runningDesired(), d, fresh)
	if plan.WriteConfig && decideReload(s.reloadInput(fresh, reloadNow)).Hold {
		// Too soon after the last reload: push the dynamic part now and
		// leave the files for the reload slot, which takes the newest
		// state then.
		plan.WriteConfig = false
		res.ReloadPending = true
	}

	// Before NGINX starts or reloads: the hosts its stream file passes
	// through find their endpoints from the first connection.
	s.syncPassthrough(d.Passthrough, !fresh && (plan.WriteConfig || res.ReloadPending), &res, &errs)
	configReady := false
	if plan.WriteConfig || fresh {
		if err := s.prepareConfig(ctx, d.Files, meta); err != nil {
			errs = append(errs, err)
		} else {
			configReady = true
		}
	}
	if fresh {
		if !configReady && s.running.files == nil {
			res.Error = errors.Join(errs...).Error()
			return res
		}
		if err := s.startNginx(ctx); err != nil {
			res.Error = errors.Join(append(errs, err)...).Error()
			return res
		}
		if configReady {
			s.running.files = d.Files
		}
		// A new NGINX has empty dicts.
		s.backendsVersion = 0
		plan.PushBackends, plan.PushCertificates = true, true
	}
	// Push before reloading: the new workers then find every backend a new
	// location names from their first request.
	if plan.PushBackends {
		push, err := s.pushBackends(ctx, d, "")
		res.BackendsPost, res.BackendsBytes = push.mode, push.bytes
		if err != nil {
			errs = append(errs, err)
		} else {
			s.running.backends = d.Backends
			res.DynamicUpdated = true
		}
	}
	if plan.PushCertificates {
		s.ocsp.set(d.Certificates)
		if err := s.pushCertificates(ctx, d); err != nil {
			errs = append(errs, err)
		} else {
			s.running.certificates = d.Certificates
			res.DynamicUpdated = true
		}
	}
	// Routes too go before the reload, but a route the new configuration
	// replaces with a server block stays until the reload is done. A new
	// NGINX has none: it gets d's.
	routes := d.Routes
	if !fresh && (plan.WriteConfig || res.ReloadPending) {
		routes = keptRoutes(d.Routes, s.running.routes)
	}
	if pushed, err := s.pushRoutes(ctx, routes, fresh, ""); err != nil {
		errs = append(errs, err)
	} else if pushed {
		res.DynamicUpdated = true
	}
	if configReady && !fresh {
		dicts := dictSizes(d.Files[nginx.MainFile])
		resized := dicts != dictSizes(s.running.files[nginx.MainFile])
		// Confirmed, not just signalled: a reload the master refuses keeps
		// the old configuration running, and the result must say so (the
		// next change tries again).
		if err := s.nginx.ReloadConfirmed(ctx, reloadTimeout); err != nil {
			if ref, ok := attributeBind(err.Error(), d.Files); ok {
				// A port another process holds (held_ports.go).
				s.refused(ctx, ref, meta)
				err = fmt.Errorf("refused because of %s %s, rendering again without it: %w", ref.Kind, ref.Name, err)
			}
			errs = append(errs, fmt.Errorf("reload nginx: %w", err))
		} else {
			s.running.files = d.Files
			s.lastReload = time.Now()
			res.Reloaded = true
			if resized {
				// New dict sizes are new, empty dicts: what was pushed
				// before the reload stayed with the old workers.
				errs = append(errs, s.repush(ctx, d, dicts)...)
			}
			// The routes the reload replaced with server blocks go now,
			// and the endpoints of hosts no longer passed through.
			if _, err := s.pushRoutes(ctx, d.Routes, false, dicts); err != nil {
				errs = append(errs, err)
			}
			s.syncPassthrough(d.Passthrough, false, &res, &errs)
		}
	}
	if len(errs) > 0 {
		res.Error = errors.Join(errs...).Error()
	}
	res.ConfigHash = filesHash(s.running.files)
	s.log.Info("applied", zap.Uint64("generation", meta.Generation), zap.Bool("reloaded", res.Reloaded),
		zap.Bool("reloadPending", res.ReloadPending), zap.Bool("started", fresh), zap.Bool("dynamicUpdated", res.DynamicUpdated), zap.String("error", res.Error))
	return res
}

// repush sends the dynamic part to the workers of a reload that resized
// the Lua dicts, making sure the workers with the new dicts took it.
func (s *Stage) repush(ctx context.Context, d desiredState, dicts string) []error {
	var errs []error
	// New dicts are empty: the version the old ones answered means nothing.
	s.backendsVersion = 0
	if _, err := s.pushBackends(ctx, d, dicts); err != nil {
		errs = append(errs, fmt.Errorf("after resizing the dicts: %w", err))
	}
	if _, err := s.pushRoutes(ctx, keptRoutes(d.Routes, s.running.routes), true, dicts); err != nil {
		errs = append(errs, fmt.Errorf("after resizing the dicts: %w", err))
	}
	body, err := d.certificatesPayload(s.ocsp.staples(time.Now()))
	if err == nil {
		_, err = s.control.postTo(ctx, "/configuration/certificates", body, dicts)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("push certificates after resizing the dicts: %w", err))
	}
	s.log.Info("lua dicts resized; dynamic configuration pushed again", zap.String("dicts", dicts))
	return errs
}

// dictRe finds the Lua dict declarations the renderer writes.
var dictRe = regexp.MustCompile(`lua_shared_dict (switchyard_config|switchyard_certs) ([0-9]+[kmg]?);`)

// dictSizes reads the sizes of the config and certificate dicts declared
// in nginx.conf as "<bytes>,<bytes>", the way the Lua endpoint reports its
// own (X-Switchyard-Dicts).
func dictSizes(conf string) string {
	sizes := map[string]int64{}
	for _, m := range dictRe.FindAllStringSubmatch(conf, -1) {
		sizes[m[1]], _ = bus.ParseSize(m[2])
	}
	return fmt.Sprintf("%d,%d", sizes["switchyard_config"], sizes["switchyard_certs"])
}

// reloadInput is what decideReload needs to know now.
func (s *Stage) reloadInput(fresh, slotCame bool) reloadFacts {
	return reloadFacts{Now: time.Now(), LastReload: s.lastReload, MinInterval: s.cfg.MinReloadInterval,
		Fresh: fresh, SlotCame: slotCame}
}

func (s *Stage) runningDesired() *desiredState {
	if s.running.files == nil {
		return nil
	}
	return &desiredState{Files: s.running.files, Backends: s.running.backends, Certificates: s.running.certificates,
		Routes: s.running.routes}
}

// prepareConfig writes the candidate configuration, tests it, and swaps it
// in. A refusal is traced to its source, which the renderer then leaves out;
// one that cannot be is logged whole.
func (s *Stage) prepareConfig(ctx context.Context, files map[string]string, meta bus.Meta) error {
	if err := nginx.WriteConfig(s.cfg.Prefix, nginx.NextConfDir, files, s.liveFiles); err != nil {
		return fmt.Errorf("write configuration: %w", err)
	}
	if output, err := nginx.TestConfig(ctx, s.cfg.NginxBinary, s.cfg.Prefix, nginx.NextConfDir); err != nil {
		if errors.Is(err, nginx.ErrTestTimeout) {
			s.log.Error("nginx -t did not finish in time; keeping the last good configuration",
				zap.Uint64("generation", meta.Generation), zap.Duration("timeout", nginx.TestTimeout), zap.String("nginx", output))
			return fmt.Errorf("test the configuration: %w", err)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("test the configuration: %w", err)
		}
		if ref, ok := attribute(output, s.cfg.Prefix, nginx.NextConfDir, files); ok {
			s.refused(ctx, ref, meta)
			return fmt.Errorf("configuration refused because of %s %s, rendering again without it: %s", ref.Kind, ref.Name, ref.Message)
		}
		s.log.Error("nginx refused the configuration and it names no Ingress or ConfigMap key; keeping the last good one",
			zap.Uint64("generation", meta.Generation), zap.String("nginx", output))
		return fmt.Errorf("configuration rejected, keeping the last good one: %w", err)
	}
	s.forgetRefusals(ctx, files, meta)
	if err := nginx.SwapConfig(s.cfg.Prefix); err != nil {
		s.liveFiles = nil // unknown: write every file next time
		return fmt.Errorf("swap configuration: %w", err)
	}
	s.liveFiles = files
	return nil
}

// loadRefusals starts from the refusals an earlier applier published (on
// an external bus): the renderer still honours them.
func (s *Stage) loadRefusals(ctx context.Context) error {
	entries, _, err := bus.ReadTable(ctx, s.conn, bus.TableRefusals)
	if err != nil {
		return fmt.Errorf("applier: read refusals: %w", err)
	}
	for key, data := range entries {
		var ref bus.Refusal
		if json.Unmarshal(data, &ref) == nil && ref.Key() == key {
			s.refusals[key] = ref
		}
	}
	return nil
}

func (s *Stage) startNginx(ctx context.Context) error {
	nginx.StopLeftover(s.cfg.Prefix, s.log)
	// A socket left by a crashed NGINX would make bind() fail.
	_ = os.Remove(s.cfg.Local.ControlSocket)
	for _, socket := range s.cfg.Local.InternalSockets() {
		_ = os.Remove(socket)
	}
	p, err := nginx.Start(s.cfg.NginxBinary, s.cfg.Prefix, s.log.Named("nginx"))
	if err != nil {
		return err
	}
	s.nginx = p
	if err := s.control.waitReady(ctx, p.Done(), 15*time.Second); err != nil {
		return fmt.Errorf("nginx did not come up: %w", err)
	}
	if err := nginx.SecureControlSocket(s.cfg.Local.ControlSocket); err != nil {
		return err
	}
	s.log.Info("nginx started", zap.Int("pid", p.PID()), zap.String("prefix", s.cfg.Prefix))
	return nil
}

// pushStaples posts the running certificates again with the OCSP
// staples as they are now. It returns when to try again after a failure,
// or nil.
func (s *Stage) pushStaples(ctx context.Context) <-chan time.Time {
	if s.nginx == nil || s.running.certificates == nil {
		return nil // the next start pushes them with the certificates
	}
	if err := s.pushCertificates(ctx, desiredState{Certificates: s.running.certificates}); err != nil {
		s.log.Warn("OCSP staples not pushed; trying again", zap.Error(err))
		return time.After(5 * time.Second)
	}
	return nil
}

func (s *Stage) pushCertificates(ctx context.Context, d desiredState) error {
	body, err := d.certificatesPayload(s.ocsp.staples(time.Now()))
	if err == nil {
		_, err = s.control.post(ctx, "/configuration/certificates", body)
	}
	if err != nil {
		return fmt.Errorf("push certificates: %w", err)
	}
	return nil
}

func (s *Stage) stopNginx() {
	if s.nginx == nil {
		return
	}
	s.log.Info("stopping nginx gracefully", zap.Int("pid", s.nginx.PID()))
	s.nginx.Stop(s.cfg.ShutdownGrace)
	s.nginx = nil
}

// refuse reports a state that is not applied: the running configuration
// and dynamic part stay as they are.
func (s *Stage) refuse(t target) {
	s.log.Error("renderer's table not applied", zap.Uint64("generation", t.meta.Generation), zap.Error(t.refused))
	res := bus.ApplyResult{Generation: t.meta.Generation, Error: t.refused.Error(), ConfigHash: filesHash(s.running.files)}
	s.publishResult(t.meta, t.meta.Trace.Child(), res)
}

// resultError is the error an apply result reports, or nil.
func resultError(res bus.ApplyResult) error {
	if res.Error == "" {
		return nil
	}
	return errors.New(res.Error)
}

func (s *Stage) publishResult(meta bus.Meta, trace bus.TraceContext, res bus.ApplyResult) {
	res.Instance = s.conn.Instance()
	data, _ := json.Marshal(res)
	out := bus.Meta{Generation: meta.Generation, Stage: bus.StageApplier, Instance: res.Instance, Trace: trace, Ingest: meta.Ingest}
	msg := &nats.Msg{Subject: bus.ApplyResultSubject, Data: data, Header: out.Header()}
	msg.Header.Set(bus.HeaderResult, res.Outcome())
	if err := s.conn.PublishWithTrace(msg); err != nil {
		s.log.Warn("publish apply result", zap.Error(err))
		return
	}
	// The applier's latency is to the generation fully applied: not while
	// its reload waits for the slot, nor when it failed.
	obs := telemetry.Get()
	obs.BusSent(bus.StageApplier, "result", len(data))
	obs.StageHandled(bus.StageApplier, meta.Generation, meta.Ingest, !res.ReloadPending && res.Error == "")
}

// mailbox holds only the newest target: a burst of generations that
// arrives while one is being applied collapses into one apply.
type mailbox struct {
	mu    sync.Mutex
	t     target
	ready chan struct{}
}

func newMailbox() *mailbox { return &mailbox{ready: make(chan struct{}, 1)} }

func (m *mailbox) put(t target) {
	m.mu.Lock()
	m.t = t
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

func (m *mailbox) take() target {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.t
}

// filesHash is a 64-bit FNV-1a hash of the configuration files by path, as
// ingress-nginx exports a hash of the configuration it runs; 0 for none.
func filesHash(files map[string]string) uint64 {
	if len(files) == 0 {
		return 0
	}
	h := fnv.New64a()
	for _, path := range slices.Sorted(maps.Keys(files)) {
		_, _ = io.WriteString(h, path)
		_, _ = h.Write([]byte{0})
		_, _ = io.WriteString(h, files[path])
		_, _ = h.Write([]byte{0})
	}
	return h.Sum64()
}
