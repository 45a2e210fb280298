// Package metrics serves the controller's Prometheus metrics, with
// ingress-nginx's names (nginx_ingress_controller_*) so an operator's
// dashboards and alerts carry over, and its health endpoints. It learns
// what happened from the bus, like every other reader of the pipeline: the
// applier's result of each generation says whether NGINX reloaded and
// whether that worked.
package metrics

import (
	"encoding/json"
	"fmt"
	"net/http"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"switchyard.dev/switchyard/bus"
)

// Labels are the constant labels ingress-nginx puts on every series.
type Labels struct {
	Namespace, Class, Pod string
}

// Collector holds the controller metrics.
type Collector struct {
	registry *prometheus.Registry

	configHash         prometheus.Gauge
	lastReloadOK       prometheus.Gauge
	lastReloadOKTime   prometheus.Gauge
	reloads            prometheus.Counter
	reloadErrors       prometheus.Counter
	dynamicOnlyApplies prometheus.Counter
	applyErrors        prometheus.Counter
	configApplied      atomic.Bool
	lastGeneration     prometheus.Gauge
	// backendsPosts and backendsBytes count the backends posts to the Lua
	// endpoint by mode (full, delta) and what they sent.
	backendsPosts *prometheus.CounterVec
	backendsBytes *prometheus.CounterVec
	// requests are NGINX's per-request series, when NGINX counts them: a
	// text scrape writes them itself (metricsHandler).
	requests atomic.Pointer[RequestCollector]
}

// New registers the controller metrics with their constant labels.
func New(l Labels) *Collector {
	constLabels := prometheus.Labels{"controller_namespace": l.Namespace, "controller_class": l.Class, "controller_pod": l.Pod}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nginx", Subsystem: "ingress_controller", Name: name, Help: help, ConstLabels: constLabels})
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Namespace: "nginx", Subsystem: "ingress_controller", Name: name, Help: help, ConstLabels: constLabels})
	}
	c := &Collector{
		registry:         prometheus.NewRegistry(),
		configHash:       gauge("config_hash", "Running configuration hash actually running"),
		lastReloadOK:     gauge("config_last_reload_successful", "Whether the last configuration reload attempt was successful"),
		lastReloadOKTime: gauge("config_last_reload_successful_timestamp_seconds", "Timestamp of the last successful configuration reload"),
		reloads:          counter("success", "Cumulative number of Ingress controller reload operations"),
		reloadErrors:     counter("errors", "Cumulative number of Ingress controller errors during reload operations"),
		dynamicOnlyApplies: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "switchyard", Name: "applies_without_reload_total",
			Help: "Generations applied through the Lua endpoint alone: NGINX reloads avoided", ConstLabels: constLabels}),
		applyErrors: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "switchyard", Name: "apply_errors_total",
			Help: "Generations whose apply reported an error (reload or Lua endpoint)", ConstLabels: constLabels}),
		lastGeneration: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "switchyard", Name: "applied_generation",
			Help: "The last generation the applier reported", ConstLabels: constLabels}),
	}
	c.backendsPosts = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "switchyard", Name: "backends_posts_total",
		Help: "Backends posts to the Lua endpoint: mode full (every backend) or delta (only the changed ones)", ConstLabels: constLabels}, []string{"mode"})
	c.backendsBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "switchyard", Name: "backends_posted_bytes_total",
		Help: "Bytes of backends posted to the Lua endpoint, by mode", ConstLabels: constLabels}, []string{"mode"})
	c.registry.MustRegister(c.configHash, c.lastReloadOK, c.lastReloadOKTime, c.reloads, c.reloadErrors, c.dynamicOnlyApplies, c.applyErrors,
		c.lastGeneration, c.backendsPosts, c.backendsBytes)
	c.registerProcess(constLabels)
	return c
}

// NewStage is the collector of a process that runs one stage other than
// the applier (`switchyard stage`): build, Go and process series only, to
// which the pipeline's are added; the controller series are the applier's
// process's alone, so that a sum over pods counts each reload once. Its
// /readyz does not wait for an apply.
func NewStage(l Labels) *Collector {
	c := &Collector{registry: prometheus.NewRegistry()}
	c.configApplied.Store(true)
	c.registerProcess(prometheus.Labels{"controller_namespace": l.Namespace, "controller_class": l.Class, "controller_pod": l.Pod})
	return c
}

func (c *Collector) registerProcess(constLabels prometheus.Labels) {
	info := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "nginx", Subsystem: "ingress_controller", Name: "build_info",
		Help: "A metric with a constant '1' labeled with information about the build.", ConstLabels: mergeLabels(constLabels, buildLabels())})
	info.Set(1)
	c.registry.MustRegister(info, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
}

// Observe records one applier result (bus.ApplyResultSubject's payload).
func (c *Collector) Observe(data []byte, now time.Time) error {
	var res bus.ApplyResult
	if err := json.Unmarshal(data, &res); err != nil {
		return fmt.Errorf("decode apply result: %w", err)
	}
	c.lastGeneration.Set(float64(res.Generation))
	if res.BackendsPost != "" && res.BackendsBytes > 0 {
		c.backendsPosts.WithLabelValues(res.BackendsPost).Inc()
		c.backendsBytes.WithLabelValues(res.BackendsPost).Add(float64(res.BackendsBytes))
	}
	if res.Error != "" {
		c.applyErrors.Inc()
	}
	switch {
	case res.Reloaded && res.Error == "":
		c.reloads.Inc()
		c.configHash.Set(float64(res.ConfigHash))
		c.lastReloadOK.Set(1)
		c.lastReloadOKTime.Set(float64(now.Unix()))
		c.configApplied.Store(true)
	case res.Reloaded || (res.Error != "" && !res.DynamicUpdated):
		// A reload that was done but reported an error, or an apply that
		// got nowhere: the configuration NGINX runs is not the one asked.
		c.reloadErrors.Inc()
		c.lastReloadOK.Set(0)
		// As ingress-nginx: no hash while the last reload failed.
		c.configHash.Set(0)
	case res.DynamicUpdated && !res.ReloadPending:
		c.dynamicOnlyApplies.Inc()
		if res.Error == "" {
			// NGINX's first start is reported this way too.
			c.configApplied.Store(true)
			c.lastReloadOK.Set(1)
			if res.ConfigHash != 0 {
				c.configHash.Set(float64(res.ConfigHash))
			}
		}
	}
	return nil
}

// Register adds collectors of other parts (the model's, the pipeline's)
// to /metrics.
func (c *Collector) Register(cs ...prometheus.Collector) { c.registry.MustRegister(cs...) }

// Applied says whether a configuration has been applied since start.
func (c *Collector) Applied() bool { return c.configApplied.Load() }

// Handler serves /metrics, /healthz (healthy: the process and its stages
// reach the bus) and /readyz (ready: healthy and not shutting down, and a
// configuration is applied).
func (c *Collector) Handler(healthy, ready func() error) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", c.metricsHandler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if err := healthy(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		if !c.Applied() {
			http.Error(w, "not ready: no configuration applied yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = fmt.Fprintln(w, "ok")
	})
	return mux
}

// buildLabels are build_info's labels, as ingress-nginx names them.
func buildLabels() prometheus.Labels {
	l := prometheus.Labels{"release": "devel", "build": "unknown", "repository": "switchyard.dev/switchyard"}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return l
	}
	if v := info.Main.Version; v != "" {
		l["release"] = v
	}
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			l["build"] = s.Value
		}
	}
	return l
}

func mergeLabels(a, b prometheus.Labels) prometheus.Labels {
	out := prometheus.Labels{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}
