package translator

import (
	"fmt"
	"regexp"
	"strconv"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// tracingSettings are the request tracing keys (bus.TracingSettings).
var tracingSettings = map[string]settingParser{
	"enable-opentelemetry":              boolSetting(func(s *bus.Settings) *bool { return &s.EnableOpentelemetry }),
	"opentelemetry-trust-incoming-span": boolSetting(func(s *bus.Settings) *bool { return &s.OpentelemetryTrustIncomingSpan }),
	"opentelemetry-operation-name": setting(func(s *bus.Settings) *string { return &s.OpentelemetryOperationName },
		fmt.Sprintf("letters, digits, spaces, . _ / : , - and the variables $%v, at most %d bytes", features.OperationNameVariables, features.MaxOperationName),
		func(v string) (string, bool) { return v, features.ValidOperationName(v) }, identity),
	"otlp-collector-host": setting(func(s *bus.Settings) *string { return &s.OTLPCollectorHost },
		"a DNS name or an IP address, or empty", parseCollectorHost, identity),
	"otlp-collector-port": intSetting(func(s *bus.Settings) *int { return &s.OTLPCollectorPort }, 1, 65535, "a TCP port"),
	"otel-service-name": patternSetting(func(s *bus.Settings) *string { return &s.OtelServiceName }, otelServiceNamePattern,
		"1 to 128 letters, digits, . _ -, starting with a letter or digit"),
	"otel-sampler": patternSetting(func(s *bus.Settings) *string { return &s.OtelSampler }, bus.OtelSamplerPattern,
		"AlwaysOn, AlwaysOff or TraceIdRatioBased"),
	"otel-sampler-ratio": setting(func(s *bus.Settings) *float64 { return &s.OtelSamplerRatio },
		"a number from 0 to 1", parseRatio, func(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }),
	"otel-sampler-parent-based":  boolSetting(func(s *bus.Settings) *bool { return &s.OtelSamplerParentBased }),
	"otel-max-queuesize":         intSetting(func(s *bus.Settings) *int { return &s.OtelMaxQueueSize }, 1, bus.MaxOtelQueueSize, "spans"),
	"otel-schedule-delay-millis": intSetting(func(s *bus.Settings) *int { return &s.OtelScheduleDelayMillis }, 100, 3600000, "milliseconds"),
	"otel-max-export-batch-size": intSetting(func(s *bus.Settings) *int { return &s.OtelMaxExportBatchSize }, 1, bus.MaxOtelQueueSize, "spans"),
}

// otelServiceNamePattern is otel-service-name: written into nginx.conf as a
// Lua literal and sent as the spans' service.name.
var otelServiceNamePattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)

func parseCollectorHost(v string) (string, bool) {
	return v, v == "" || (len(v) <= 253 && bus.OTLPCollectorHostPattern.MatchString(v))
}

func parseRatio(v string) (float64, bool) {
	f, err := strconv.ParseFloat(v, 64)
	return f, err == nil && f >= 0 && f <= 1
}

// ReasonNoEffect is a warning: a key whose value does nothing as the
// other keys stand.
const ReasonNoEffect = "NoEffect"

// checkTracing warns where enable-opentelemetry cannot do what it seems
// to: ingress-nginx's default sampler records nothing, and without a
// collector host only --otlp-endpoint receives spans.
func checkTracing(s *bus.Settings) []bus.Problem {
	if !s.EnableOpentelemetry {
		return nil
	}
	var problems []bus.Problem
	if s.OtelSampler == "AlwaysOff" && !s.OtelSamplerParentBased {
		problems = append(problems, bus.Problem{Field: "data.otel-sampler", Reason: ReasonNoEffect,
			Message: "enable-opentelemetry is on but otel-sampler is AlwaysOff (ingress-nginx's default): traceparent goes upstream, no span is recorded; set otel-sampler to AlwaysOn or TraceIdRatioBased"})
	}
	if s.OTLPCollectorHost == "" {
		problems = append(problems, bus.Problem{Field: "data.otlp-collector-host", Reason: ReasonNoEffect,
			Message: "enable-opentelemetry is on but otlp-collector-host is empty: request spans go to --otlp-endpoint, and nothing is traced without it"})
	}
	return problems
}
