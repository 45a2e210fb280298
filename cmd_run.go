package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

func runCommand(args []string) error {
	var o options
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.printVersionIfAsked() {
		return nil
	}
	log, err := o.logger()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if err := o.checkIngressNginxFlags(log); err != nil {
		return err
	}
	if err := o.setMemoryLimit(log); err != nil {
		return err
	}
	if o.nginxBinary, err = exec.LookPath(o.nginxBinary); err != nil {
		return fmt.Errorf("--nginx-binary: %w (run make deps)", err)
	}
	ctx, stop, err := o.shutdownContext(log)
	if err != nil {
		return err
	}
	defer stop()
	started := make(chan struct{})
	go keepHeadroom(ctx, started, log)
	if o.profilingAddr != "" {
		go serveProfiling(ctx, o.profilingAddr, log)
	}

	stopTracing, err := o.startTracing(context.Background(), log)
	if err != nil {
		return err
	}
	defer stopTracing()
	embedded, err := startBus(&o)
	if err != nil {
		return err
	}
	defer embedded.Shutdown()
	if err := startRequestSpans(ctx, &o, log); err != nil {
		return err
	}
	if o.metricsAddr != "" {
		if err := serveMetrics(ctx, &o, embedded.Connect, log); err != nil {
			return err
		}
	}
	if url := embedded.ClientURL(); url != "" {
		log.Info("bus listening", zap.String("url", url))
	}
	memConn, err := embedded.Connect("switchyard-memory")
	if err != nil {
		return err
	}
	go func() {
		releaseMemory(ctx, memConn, started, log)
		memConn.Close()
	}()
	stages := bus.Stages
	if o.webhookAddr != "" {
		stages = append(slices.Clone(stages), bus.StageWebhook)
	}
	err = runStages(ctx, &o, embedded, stages, log)
	log.Info("stopped")
	return err
}

// serveProfiling exposes net/http/pprof for diagnosing CPU and memory.
func serveProfiling(ctx context.Context, addr string, log *zap.Logger) {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/readyz", stageReadiness.serveHTTP)
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	log.Info("profiling", zap.String("addr", addr))
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn("profiling server", zap.Error(err))
	}
}

func startBus(o *options) (*bus.Embedded, error) {
	// Created here, before the bus makes it private: NGINX workers must be
	// able to enter it to reach their temporary files.
	if err := os.MkdirAll(o.stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("--state-dir: %w", err)
	}
	storeDir := filepath.Join(o.stateDir, "bus")
	// The bus's tables are rebuilt from the sources at every start; a
	// leftover store from an earlier run must not resurrect objects that
	// are gone.
	if err := os.RemoveAll(storeDir); err != nil {
		return nil, err
	}
	opts := bus.EmbeddedOptions{StoreDir: storeDir, Listen: o.natsListen}
	if o.natsListen != "" {
		if o.natsKeys == "" {
			return nil, errors.New("--nats-listen needs --nats-keys DIR (create the keys with switchyard buskeys DIR): a bus others can reach holds every Secret the controller uses")
		}
		keys, err := bus.PublicKeys(o.natsKeys)
		if err != nil {
			return nil, fmt.Errorf("--nats-keys: %w", err)
		}
		opts.Keys = keys
	}
	return bus.StartEmbedded(opts)
}

// runStages runs the named stages, each on its own in-process connection,
// until ctx ends or one of them fails; then it stops the others and waits.
func runStages(ctx context.Context, o *options, embedded *bus.Embedded, names []string, log *zap.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, len(names))
	for _, name := range names {
		conn, err := embedded.Connect("switchyard-" + name)
		if err != nil {
			return err
		}
		defer conn.Close()
		stage, err := o.newStage(name, conn, log)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := stage.Run(ctx); err != nil {
				errs <- fmt.Errorf("%s: %w", name, err)
				cancel()
			}
		}()
	}
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// stageReadiness is whether each stage of this process reaches the bus
// (GET /readyz on --profiling-addr): 200 when all do, else 503 naming
// those that do not.
var stageReadiness = &readiness{conns: map[string]*bus.Conn{}}

type readiness struct {
	mu    sync.Mutex
	conns map[string]*bus.Conn
	// draining: a shutdown signal came, and NGINX serves on for
	// --shutdown-grace-period while load balancers take this pod out.
	draining atomic.Bool
}

func (r *readiness) add(name string, conn *bus.Conn) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.conns[name] = conn
}

func (r *readiness) serveHTTP(w http.ResponseWriter, _ *http.Request) {
	if err := r.readyErr(); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	_, _ = fmt.Fprintln(w, "ok")
}

// readyErr is err, or that the process is shutting down.
func (r *readiness) readyErr() error {
	if r.draining.Load() {
		return errors.New("not ready: shutting down")
	}
	return r.err()
}

// err names the stages that cannot reach the bus, nil when none.
func (r *readiness) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	var notReady []string
	for name, conn := range r.conns {
		if ok, _ := conn.Ready(); !ok {
			notReady = append(notReady, name)
		}
	}
	if len(notReady) > 0 {
		sort.Strings(notReady)
		return fmt.Errorf("not ready: %v cannot reach the bus", notReady)
	}
	return nil
}
