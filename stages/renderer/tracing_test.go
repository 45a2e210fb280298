package renderer

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func TestLocationTracing(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		name string
		f    *bus.Features
		want string
	}{
		{"no features", nil, ""},
		{"no tracing annotation: the ConfigMap decides", &bus.Features{}, ""},
		{"on, ConfigMap trust and name", &bus.Features{Tracing: &bus.Tracing{Enabled: true}}, `"1-"`},
		{"off", &bus.Features{Tracing: &bus.Tracing{TrustIncomingSpan: &yes}}, `"01"`},
		{"untrusted, named", &bus.Features{Tracing: &bus.Tracing{Enabled: true, TrustIncomingSpan: &no, OperationName: "GET $uri"}},
			`"10GET ${switchyard_dollar}uri"`},
	} {
		got, err := locationTracing(tc.f)
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, got, err, tc.want)
		}
	}
	if _, err := locationTracing(&bus.Features{Tracing: &bus.Tracing{Enabled: true, OperationName: `x"; evil`}}); err == nil {
		t.Error("an operation name with a quote was written")
	}
}

func TestTracingInit(t *testing.T) {
	s := bus.DefaultSettings().TracingSettings
	if init, dict, err := tracingInit(Config{}, s); init != "" || dict != "" || err != nil {
		t.Errorf("no collector: %q %q %v, want tracing off", init, dict, err)
	}
	init, dict, err := tracingInit(Config{OTLPEndpoint: "127.0.0.1:4317"}, s)
	if err != nil || !strings.Contains(init, `endpoint = "127.0.0.1:4317"`) || !strings.Contains(init, `sampler = "AlwaysOff"`) || dict != "4096k" {
		t.Errorf("--otlp-endpoint: %q %q %v", init, dict, err)
	}
	s.OTLPCollectorHost, s.OTLPCollectorPort, s.OtelMaxQueueSize = "fd00::7", 4318, 10
	init, dict, err = tracingInit(Config{OTLPEndpoint: "127.0.0.1:4317"}, s)
	if err != nil || !strings.Contains(init, `endpoint = "[fd00::7]:4318"`) || dict != "1024k" {
		t.Errorf("otlp-collector-host wins: %q %q %v", init, dict, err)
	}
	s.OtelSampler = "Sometimes"
	if _, _, err := tracingInit(Config{OTLPEndpoint: "127.0.0.1:4317"}, s); err == nil {
		t.Error("an unknown sampler was written")
	}
}
