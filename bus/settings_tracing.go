package bus

import "regexp"

// TracingSettings are the controller ConfigMap's request tracing keys, as
// ingress-nginx's (its OpenTelemetry module); Switchyard traces in Lua
// (lua/switchyard/tracing.lua) and the controller exports the spans over
// OTLP. An Ingress's enable-opentelemetry, opentelemetry-trust-incoming-
// span and opentelemetry-operation-name annotations override the first
// three.
type TracingSettings struct {
	EnableOpentelemetry bool `json:"enableOpentelemetry"` // enable-opentelemetry: trace every location
	// OpentelemetryTrustIncomingSpan is opentelemetry-trust-incoming-span:
	// continue the client's traceparent.
	OpentelemetryTrustIncomingSpan bool `json:"opentelemetryTrustIncomingSpan"`
	// OpentelemetryOperationName is opentelemetry-operation-name: the
	// span name, with the variables features.OperationNameVariables; ""
	// is the location's path.
	OpentelemetryOperationName string `json:"opentelemetryOperationName,omitempty"`
	// OTLPCollectorHost and OTLPCollectorPort are where spans go (OTLP
	// over gRPC, plain text); with no host, the pipeline's
	// --otlp-endpoint, and with neither no request is traced.
	OTLPCollectorHost string `json:"otlpCollectorHost,omitempty"`
	OTLPCollectorPort int    `json:"otlpCollectorPort"`
	OtelServiceName   string `json:"otelServiceName"` // otel-service-name: the spans' service.name
	// OtelSampler is otel-sampler: AlwaysOn, AlwaysOff or
	// TraceIdRatioBased (with OtelSamplerRatio); OtelSamplerParentBased
	// follows a trusted parent's decision instead where there is one.
	OtelSampler            string  `json:"otelSampler"`
	OtelSamplerRatio       float64 `json:"otelSamplerRatio"`
	OtelSamplerParentBased bool    `json:"otelSamplerParentBased"`
	// OtelMaxQueueSize is otel-max-queuesize: spans waiting for export
	// beyond it are dropped (and counted).
	OtelMaxQueueSize int `json:"otelMaxQueueSize"`
	// OtelScheduleDelayMillis is otel-schedule-delay-millis: how often the
	// controller drains and exports the spans.
	OtelScheduleDelayMillis int `json:"otelScheduleDelayMillis"`
	// OtelMaxExportBatchSize is otel-max-export-batch-size: spans per
	// drain and export.
	OtelMaxExportBatchSize int `json:"otelMaxExportBatchSize"`
}

// Tracing value patterns: the collector host is a DNS name or an IP
// address; the sampler one of the three names.
var (
	OTLPCollectorHostPattern = regexp.MustCompile(`^` + hostNameRE + `$|^[0-9a-fA-F:]*:[0-9a-fA-F:.]*$`)
	OtelSamplerPattern       = regexp.MustCompile(`^(AlwaysOn|AlwaysOff|TraceIdRatioBased)$`)
)

// MaxOtelQueueSize bounds otel-max-queuesize: the shared dict the spans
// wait in is sized for it (about 2 KiB a span).
const MaxOtelQueueSize = 16384

// defaultTracingSettings are ingress-nginx's defaults.
func defaultTracingSettings() TracingSettings {
	return TracingSettings{
		OpentelemetryTrustIncomingSpan: true, OTLPCollectorPort: 4317, OtelServiceName: "nginx",
		OtelSampler: "AlwaysOff", OtelSamplerRatio: 0.01, OtelMaxQueueSize: 2048,
		OtelScheduleDelayMillis: 5000, OtelMaxExportBatchSize: 512,
	}
}
