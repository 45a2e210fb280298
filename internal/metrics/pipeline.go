package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/telemetry"
)

// Pipeline is Switchyard's own view of its stages, which no other
// controller has: how long a change takes from the watcher to each stage,
// what each stage puts on the bus, how many generations a stage is behind
// the one feeding it, and how the annotation plugins answer. It is the
// process's telemetry.Observer; every label (stage, kind, plugin) comes
// from the code or the configured plugins, never from a user's object.
type Pipeline struct {
	latency     *prometheus.HistogramVec
	messages    *prometheus.CounterVec
	bytes       *prometheus.CounterVec
	generation  *prometheus.GaugeVec
	committed   *prometheus.GaugeVec
	pluginCalls *prometheus.HistogramVec
	pluginFails *prometheus.CounterVec
	restarts    *prometheus.CounterVec
	leader      *prometheus.GaugeVec
	lag         *prometheus.Desc

	mu sync.Mutex
	// handled and lastCommit are each stage's last generation done and
	// last generation published, for the lag.
	handled, lastCommit map[string]uint64
}

var _ telemetry.Observer = (*Pipeline)(nil)

// StageLatencyBuckets span a change handled at once to one waiting out
// --min-reload-interval and a slow reload.
var StageLatencyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// NewPipeline builds the pipeline metrics with the constant labels.
func NewPipeline(l Labels) *Pipeline {
	constLabels := l.prometheus()
	opts := func(name, help string) prometheus.Opts {
		return prometheus.Opts{Namespace: "switchyard", Name: name, Help: help, ConstLabels: constLabels}
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		o := opts(name, help)
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: o.Namespace, Name: o.Name, Help: o.Help,
			ConstLabels: o.ConstLabels, Buckets: buckets}, labels)
	}
	return &Pipeline{
		latency: histogram("stage_latency_seconds",
			"Time from a change entering the watcher to the stage having published it (the applier: applied it)",
			StageLatencyBuckets, "stage"),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts(opts("bus_messages_total",
			"Messages a stage published on the bus, by the kind of key (commit: a generation closed)")), []string{"stage", "kind"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts(opts("bus_bytes_total",
			"Payload bytes a stage published on the bus, by the kind of key")), []string{"stage", "kind"}),
		generation: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("stage_generation",
			"The last generation a stage is done with, whether or not its output changed")), []string{"stage"}),
		committed: prometheus.NewGaugeVec(prometheus.GaugeOpts(opts("stage_committed_generation",
			"The last generation a stage published a change for")), []string{"stage"}),
		pluginCalls: histogram("plugin_call_duration_seconds", "Duration of one call of an annotation plugin",
			prometheus.DefBuckets, "plugin"),
		pluginFails: prometheus.NewCounterVec(prometheus.CounterOpts(opts("plugin_call_errors_total",
			"Calls of an annotation plugin that failed (its Ingresses' annotations fail closed)")), []string{"plugin"}),
		restarts: prometheus.NewCounterVec(prometheus.CounterOpts(opts("plugin_restarts_total",
			"Times an annotation plugin process was started again after it failed")), []string{"plugin"}),
		leader: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "nginx", Subsystem: "ingress_controller",
			Name: "leader_election_status", ConstLabels: constLabels,
			Help: "Gauge reporting status of the leader election, 0 indicates follower, 1 indicates leader. 'name' is the string used to identify the lease"},
			[]string{"name"}),
		lag: prometheus.NewDesc("switchyard_stage_generation_lag",
			"Generations a stage is behind the last one its input stage published (0: caught up); only for stages running in this process with their input",
			[]string{"stage"}, constLabels),
		handled: map[string]uint64{}, lastCommit: map[string]uint64{},
	}
}

func (l Labels) prometheus() prometheus.Labels {
	return prometheus.Labels{"controller_namespace": l.Namespace, "controller_class": l.Class, "controller_pod": l.Pod}
}

// BusSent implements telemetry.Observer.
func (p *Pipeline) BusSent(stage, kind string, bytes int) {
	p.messages.WithLabelValues(stage, kind).Inc()
	p.bytes.WithLabelValues(stage, kind).Add(float64(bytes))
}

// StageHandled implements telemetry.Observer.
func (p *Pipeline) StageHandled(stage string, generation uint64, ingest time.Time, committed bool) {
	p.handle(stage, generation, ingest, committed, time.Now())
}

func (p *Pipeline) handle(stage string, generation uint64, ingest time.Time, committed bool, now time.Time) {
	p.mu.Lock()
	p.handled[stage] = generation
	if committed {
		p.lastCommit[stage] = generation
	}
	p.mu.Unlock()
	p.generation.WithLabelValues(stage).Set(float64(generation))
	if !committed {
		return
	}
	p.committed.WithLabelValues(stage).Set(float64(generation))
	if !ingest.IsZero() && !now.Before(ingest) {
		p.latency.WithLabelValues(stage).Observe(now.Sub(ingest).Seconds())
	}
}

// PluginCall implements telemetry.Observer.
func (p *Pipeline) PluginCall(plugin string, took time.Duration, failed bool) {
	p.pluginCalls.WithLabelValues(plugin).Observe(took.Seconds())
	if failed {
		p.pluginFails.WithLabelValues(plugin).Inc()
	} else {
		// Export the plugin's error series from its first call on.
		p.pluginFails.WithLabelValues(plugin).Add(0)
	}
}

// PluginRestart implements telemetry.Observer.
func (p *Pipeline) PluginRestart(plugin string) { p.restarts.WithLabelValues(plugin).Inc() }

// LeaderElection implements telemetry.Observer.
func (p *Pipeline) LeaderElection(electionID string, leading bool) {
	p.leader.WithLabelValues(electionID).Set(boolValue(leading))
}

// Describe implements prometheus.Collector.
func (p *Pipeline) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range p.vectors() {
		c.Describe(ch)
	}
	ch <- p.lag
}

// Collect implements prometheus.Collector.
func (p *Pipeline) Collect(ch chan<- prometheus.Metric) {
	for _, c := range p.vectors() {
		c.Collect(ch)
	}
	for stage, lag := range p.lags() {
		ch <- prometheus.MustNewConstMetric(p.lag, prometheus.GaugeValue, float64(lag), stage)
	}
}

func (p *Pipeline) vectors() []prometheus.Collector {
	return []prometheus.Collector{p.latency, p.messages, p.bytes, p.generation, p.committed, p.pluginCalls,
		p.pluginFails, p.restarts, p.leader}
}

// lags is, for each stage whose input stage this process has heard from,
// how far the input's last published generation is ahead of the stage's
// last handled one. A generation that changed nothing for the input is
// never published, so a stage is not behind for it.
func (p *Pipeline) lags() map[string]uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]uint64{}
	for i := 1; i < len(bus.Stages); i++ {
		input, stage := bus.Stages[i-1], bus.Stages[i]
		published, ok := p.lastCommit[input]
		done, seen := p.handled[stage]
		if !ok || !seen {
			continue
		}
		out[stage] = 0
		if published > done {
			out[stage] = published - done
		}
	}
	return out
}
