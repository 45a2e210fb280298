package metrics

import "github.com/prometheus/client_golang/prometheus"

// RequestSpans is what the request span exporter counts
// (otelexport.RequestSpans).
type RequestSpans interface {
	Dropped() float64
	Exported() uint64
	ExportErrors() uint64
}

// NewRequestSpanCollectors are the request tracing series: spans NGINX
// dropped (its queue full, otel-max-queuesize, or its dict out of memory;
// the count restarts with NGINX), spans exported, and failed exports.
func NewRequestSpanCollectors(l Labels, r RequestSpans) []prometheus.Collector {
	constLabels := prometheus.Labels{"controller_namespace": l.Namespace, "controller_class": l.Class, "controller_pod": l.Pod}
	opts := func(name, help string) prometheus.CounterOpts {
		return prometheus.CounterOpts{Namespace: "switchyard", Name: name, Help: help, ConstLabels: constLabels}
	}
	return []prometheus.Collector{
		prometheus.NewCounterFunc(opts("request_spans_dropped_total",
			"Request spans NGINX dropped: its queue was full (otel-max-queuesize) or its dict had no memory left"), r.Dropped),
		prometheus.NewCounterFunc(opts("request_spans_exported_total", "Request spans sent to the OTLP collector"),
			func() float64 { return float64(r.Exported()) }),
		prometheus.NewCounterFunc(opts("request_span_export_errors_total", "Exports of request spans that failed (their spans are lost)"),
			func() float64 { return float64(r.ExportErrors()) }),
	}
}
