package translator

import (
	"slices"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func operationNameField(s *bus.Settings) *string { return &s.OpentelemetryOperationName }
func collectorHostField(s *bus.Settings) *string { return &s.OTLPCollectorHost }
func samplerField(s *bus.Settings) *string       { return &s.OtelSampler }

var tracingSettingsCases = map[string]keyCases{
	"enable-opentelemetry":              boolCases(false, func(s *bus.Settings) *bool { return &s.EnableOpentelemetry }),
	"opentelemetry-trust-incoming-span": boolCases(true, func(s *bus.Settings) *bool { return &s.OpentelemetryTrustIncomingSpan }),
	"opentelemetry-operation-name": {def: "",
		valid: []valid{
			{"HTTP $request_method $service_name $uri", setString(operationNameField, "HTTP $request_method $service_name $uri")},
			{"", setString(operationNameField, "")},
			{"checkout", setString(operationNameField, "checkout")},
		},
		invalid: []string{"$http_authorization", "$uri$", `a"b`, "${uri}", "a;b", strings.Repeat("x", 257)},
	},
	"otlp-collector-host": {def: "",
		valid: []valid{
			{"otel-coll-collector.otel.svc", setString(collectorHostField, "otel-coll-collector.otel.svc")},
			{"10.0.0.7", setString(collectorHostField, "10.0.0.7")},
			{"fd00::7", setString(collectorHostField, "fd00::7")},
			{"", setString(collectorHostField, "")},
		},
		invalid: []string{"http://collector", "collector:4317", "a b", "-bad.example"},
	},
	"otlp-collector-port": intCases("4317", func(s *bus.Settings) *int { return &s.OTLPCollectorPort }, []int{1, 4317, 65535}, []string{"0", "65536"}),
	"otel-service-name": stringCases("nginx", func(s *bus.Settings) *string { return &s.OtelServiceName },
		[]string{"nginx", "edge-proxy", "ingress.prod_1"}, []string{"-x", "a b", `"nginx"`, strings.Repeat("n", 129)}),
	"otel-sampler": {def: "AlwaysOff",
		valid: []valid{
			{"AlwaysOn", setString(samplerField, "AlwaysOn")},
			{"TraceIdRatioBased", setString(samplerField, "TraceIdRatioBased")},
			{"AlwaysOff", setString(samplerField, "AlwaysOff")},
		},
		invalid: []string{"", "alwayson", "ParentBased"},
	},
	"otel-sampler-ratio": {def: "0.01",
		valid: []valid{
			{"1.0", func(s *bus.Settings) { s.OtelSamplerRatio = 1 }},
			{"0", func(s *bus.Settings) { s.OtelSamplerRatio = 0 }},
			{"0.25", func(s *bus.Settings) { s.OtelSamplerRatio = 0.25 }},
		},
		invalid: []string{"", "1.5", "-0.1", "NaN", "half"},
	},
	"otel-sampler-parent-based":  boolCases(false, func(s *bus.Settings) *bool { return &s.OtelSamplerParentBased }),
	"otel-max-queuesize":         intCases("2048", func(s *bus.Settings) *int { return &s.OtelMaxQueueSize }, []int{1, 2048, 16384}, []string{"0", "16385"}),
	"otel-schedule-delay-millis": intCases("5000", func(s *bus.Settings) *int { return &s.OtelScheduleDelayMillis }, []int{100, 5000, 60000}, []string{"0", "99"}),
	"otel-max-export-batch-size": intCases("512", func(s *bus.Settings) *int { return &s.OtelMaxExportBatchSize }, []int{1, 512, 16384}, []string{"0", "16385"}),
}

func TestCheckTracing(t *testing.T) {
	fields := func(data map[string]string) []string {
		_, problems := parseSettings(data)
		var out []string
		for _, p := range problems {
			if p.Reason == ReasonNoEffect {
				out = append(out, p.Field)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name string
		data map[string]string
		want []string
	}{
		{"off", map[string]string{}, nil},
		{"on with the defaults", map[string]string{"enable-opentelemetry": "true"}, []string{"data.otel-sampler", "data.otlp-collector-host"}},
		{"on, sampled, with a collector", map[string]string{"enable-opentelemetry": "true", "otel-sampler": "AlwaysOn", "otlp-collector-host": "c"}, nil},
		{"parent-based AlwaysOff follows parents", map[string]string{"enable-opentelemetry": "true", "otel-sampler-parent-based": "true", "otlp-collector-host": "c"}, nil},
	} {
		if got := fields(tc.data); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
