package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/metrics"
	"switchyard.dev/switchyard/internal/nginx"
	"switchyard.dev/switchyard/internal/telemetry"
)

// metricsDictSize is NGINX's shared dict of per-request metrics: a series
// (one label set) takes a few KiB, so this holds several thousand; when it
// is full, new series are dropped and counted
// (switchyard_request_metrics_dropped_total).
const metricsDictSize = "32m"

// serveMetrics serves /metrics, /healthz and /readyz on addr
// (--metrics-addr) until ctx ends, fed by the applier's results on the bus.
// connect opens the process's bus connection for the metrics.
func serveMetrics(ctx context.Context, o *options, connect func(name string) (*bus.Conn, error), log *zap.Logger) error {
	labels := metricsLabels(o)
	collector := metrics.New(labels)
	conn, err := connect("switchyard-metrics")
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	// The stages of this process report to the pipeline's metrics.
	pipeline := metrics.NewPipeline(labels)
	telemetry.Set(pipeline)
	model := metrics.NewModelCollector(labels)
	collector.Register(pipeline, model)
	if o.requestSpans != nil {
		collector.Register(metrics.NewRequestSpanCollectors(labels, o.requestSpans)...)
	}
	ingresses := metrics.NewIngressSet()
	go followModel(ctx, conn, model, ingresses, log)
	if o.enableMetrics {
		if err := registerNginxMetrics(collector, labels, ingresses, o, log); err != nil {
			conn.Close()
			return err
		}
	}
	results, sub, err := conn.SubscribeAll(ctx, bus.ApplyResultSubject)
	if err != nil {
		conn.Close()
		return fmt.Errorf("metrics: subscribe to apply results: %w", err)
	}
	go func() {
		defer conn.Close()
		defer func() { _ = sub.Unsubscribe() }()
		for {
			select {
			case <-ctx.Done():
				return
			case msg := <-results:
				if !ownResult(o, msg) {
					continue
				}
				if err := collector.Observe(msg.Data, time.Now()); err != nil {
					log.Warn("metrics", zap.Error(err))
				}
			}
		}
	}()
	listenMetrics(ctx, o.metricsAddr, collector, log)
	return nil
}

// ownResult says whether an apply result is this process's applier's:
// with several appliers on one bus, each exports only its own NGINX's.
func ownResult(o *options, msg *nats.Msg) bool {
	return o.instance == "" || msg.Header.Get(bus.HeaderInstance) == o.instance
}

// serveStageMetrics serves the metrics of a process running one stage
// other than the applier (`switchyard stage NAME --metrics-addr`): the
// pipeline's series of that stage (its latency, bus traffic, generation,
// and for the annotations stage its plugins; for the watcher the leader
// election), with Go and process series. The applier's process serves
// everything serveMetrics does.
func serveStageMetrics(ctx context.Context, o *options, log *zap.Logger) {
	labels := metricsLabels(o)
	collector := metrics.NewStage(labels)
	pipeline := metrics.NewPipeline(labels)
	telemetry.Set(pipeline)
	collector.Register(pipeline)
	listenMetrics(ctx, o.metricsAddr, collector, log)
}

func metricsLabels(o *options) metrics.Labels {
	return metrics.Labels{Namespace: podNamespace(), Class: o.ingressClass, Pod: os.Getenv("POD_NAME")}
}

// listenMetrics serves the collector's handler on addr until ctx ends.
func listenMetrics(ctx context.Context, addr string, collector *metrics.Collector, log *zap.Logger) {
	srv := &http.Server{Addr: addr, Handler: collector.Handler(stageReadiness.err, stageReadiness.readyErr), ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	go func() {
		log.Info("metrics", zap.String("addr", addr))
		if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server", zap.Error(err))
		}
	}()
}

// followModel keeps the model's series (certificates, orphan Ingresses)
// and the set of known Ingresses up to date with the annotations stage's
// table.
func followModel(ctx context.Context, conn *bus.Conn, model *metrics.ModelCollector, ingresses *metrics.IngressSet, log *zap.Logger) {
	_ = bus.Follow(ctx, conn, bus.StageAnnotations, func(_ context.Context, snap bus.Snapshot) error {
		ingresses.Update(snap)
		if err := model.Update(snap); err != nil {
			log.Warn("metrics", zap.Error(err))
		}
		return nil
	})
}

// registerNginxMetrics adds what NGINX counts (--enable-metrics): the
// per-request series and nginx_process_*. Until NGINX runs, every scrape
// finds nothing to read: not worth more than a debug line
// (switchyard_request_metrics_read_errors_total counts the per-request
// ones).
func registerNginxMetrics(collector *metrics.Collector, labels metrics.Labels, ingresses *metrics.IngressSet, o *options, log *zap.Logger) error {
	prefix, err := o.prefix()
	if err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	socket := nginx.ControlSocketFor(prefix)
	opts := metrics.RequestOptions{PerHost: o.metricsPerHost, StatusClasses: o.statusClasses, Exclude: splitList(o.excludeMetrics),
		Ingresses: ingresses}
	collector.RegisterRequests(metrics.NewRequestCollector(labels, socket, opts, func(err error) {
		log.Debug("per-request metrics", zap.Error(err))
	}))
	collector.RegisterProcess(metrics.NewProcessCollector(labels, socket, filepath.Join(prefix, "nginx.pid"), func(err error) {
		log.Debug("nginx process metrics", zap.Error(err))
	}))
	return nil
}

// serveStageProcessMetrics serves --metrics-addr, if set, before the stage
// runs, so that it reports from its first generation: the applier's
// process exports all of run's metrics (it runs NGINX), any other stage
// its own pipeline series.
func serveStageProcessMetrics(ctx context.Context, o *options, name, natsURL string, auth []nats.Option, log *zap.Logger) error {
	if o.metricsAddr == "" {
		return nil
	}
	if name == bus.StageApplier {
		// The applier's own identity: it may read the annotated table and
		// its results (bus/auth.go).
		return serveMetrics(ctx, o, func(client string) (*bus.Conn, error) { return bus.Connect(natsURL, client, auth...) }, log)
	}
	serveStageMetrics(ctx, o, log)
	return nil
}
