package renderer

// Request tracing (lua/switchyard/tracing.lua): the ConfigMap's settings
// go to tracing.lua's init in nginx.conf, with the shared dict the spans
// wait in; an Ingress's own choice goes to $switchyard_otel in each of
// its locations. Tracing is rendered only when spans have somewhere to
// go: otlp-collector-host, or the pipeline's --otlp-endpoint.

import (
	"fmt"
	"net"
	"strconv"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// bytesPerQueuedSpan sizes the switchyard_traces dict: a span is about
// 1 KiB of JSON, plus the list node.
const bytesPerQueuedSpan = 2048

// tracingEndpoint is where request spans go, "" for nowhere.
func tracingEndpoint(cfg Config, s bus.TracingSettings) string {
	if s.OTLPCollectorHost != "" {
		return net.JoinHostPort(s.OTLPCollectorHost, strconv.Itoa(s.OTLPCollectorPort))
	}
	return cfg.OTLPEndpoint
}

// tracingInit is tracing.lua's init argument and the dict's size, both ""
// when tracing is off.
func tracingInit(cfg Config, s bus.TracingSettings) (init, dictSize string, err error) {
	endpoint := tracingEndpoint(cfg, s)
	if endpoint == "" {
		return "", "", nil
	}
	if !bus.OtelSamplerPattern.MatchString(s.OtelSampler) || s.OtelSamplerRatio < 0 || s.OtelSamplerRatio > 1 ||
		s.OtelMaxQueueSize < 1 || s.OtelMaxQueueSize > bus.MaxOtelQueueSize || s.OtelMaxExportBatchSize < 1 || s.OtelScheduleDelayMillis < 1 {
		return "", "", fmt.Errorf("refusing tracing settings %+v", s)
	}
	var op, ep, service string
	if op, err = luaOperationName(s.OpentelemetryOperationName); err != nil {
		return "", "", err
	}
	if ep, err = luaString(endpoint); err != nil {
		return "", "", err
	}
	if service, err = luaString(s.OtelServiceName); err != nil {
		return "", "", err
	}
	init = fmt.Sprintf("{ enabled = %t, trust = %t, operation = %s, sampler = %q, ratio = %s, parent_based = %t, "+
		"max_queue = %d, endpoint = %s, service = %s, delay_ms = %d, batch = %d }",
		s.EnableOpentelemetry, s.OpentelemetryTrustIncomingSpan, op, s.OtelSampler,
		strconv.FormatFloat(s.OtelSamplerRatio, 'g', -1, 64), s.OtelSamplerParentBased,
		s.OtelMaxQueueSize, ep, service, s.OtelScheduleDelayMillis, s.OtelMaxExportBatchSize)
	return init, fmt.Sprintf("%dk", max(1024, s.OtelMaxQueueSize*bytesPerQueuedSpan/1024)), nil
}

// luaOperationName is name as a Lua literal. Its pattern admits no quote,
// backslash or brace; its "$" is plain text inside init_by_lua_block
// (luaString refuses it, as NGINX would expand it elsewhere).
func luaOperationName(name string) (string, error) {
	if !features.ValidOperationName(name) {
		return "", fmt.Errorf("refusing operation name %q", name)
	}
	return `"` + name + `"`, nil
}

// locationTracing is $switchyard_otel of a location, quoted for set, or
// "" when its Ingress has no tracing annotation (the ConfigMap decides):
// enabled ("0"/"1"), trust ("0"/"1", "-" for the ConfigMap's), then the
// operation name ("" for the ConfigMap's). tracing.lua reads it.
func locationTracing(f *bus.Features) (string, error) {
	if f == nil || f.Tracing == nil {
		return "", nil
	}
	t := f.Tracing
	if !features.ValidOperationName(t.OperationName) {
		return "", fmt.Errorf("refusing operation name %q", t.OperationName)
	}
	spec := "0"
	if t.Enabled {
		spec = "1"
	}
	switch {
	case t.TrustIncomingSpan == nil:
		spec += "-"
	case *t.TrustIncomingSpan:
		spec += "1"
	default:
		spec += "0"
	}
	return quoteLiteral(spec + t.OperationName)
}
