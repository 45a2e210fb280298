// Package otelexport sends Switchyard's traces to an OpenTelemetry
// collector over OTLP/gRPC: the pipeline's stage spans (bus.RecordStageSpan).
package otelexport

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"switchyard.dev/switchyard/bus"
)

// DefaultServiceName is the service.name of the pipeline's spans.
const DefaultServiceName = "switchyard"

// Config says where spans go.
type Config struct {
	// Endpoint is the collector's HOST:PORT (OTLP/gRPC, plain text as
	// ingress-nginx's otlp-collector-host/port).
	Endpoint string
	// ServiceName is the resource's service.name.
	ServiceName string
	// BatchTimeout is how long spans may wait before they are sent
	// (default 5 s).
	BatchTimeout time.Duration
}

// CheckEndpoint refuses anything but HOST:PORT with a port in 1..65535.
func CheckEndpoint(endpoint string) error {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return fmt.Errorf("OTLP endpoint %q: want HOST:PORT: %w", endpoint, err)
	}
	if host == "" {
		return fmt.Errorf("OTLP endpoint %q: no host", endpoint)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("OTLP endpoint %q: port must be 1-65535", endpoint)
	}
	return nil
}

// Exporter is a running trace pipeline; Shutdown sends what is queued.
type Exporter struct {
	provider *sdktrace.TracerProvider
}

// Start connects the exporter (lazily: a collector that is down only
// delays spans, which are dropped when the queue is full) and turns on
// stage spans.
func Start(ctx context.Context, cfg Config) (*Exporter, error) {
	if err := CheckEndpoint(cfg.Endpoint); err != nil {
		return nil, err
	}
	if cfg.ServiceName == "" {
		cfg.ServiceName = DefaultServiceName
	}
	if cfg.BatchTimeout <= 0 {
		cfg.BatchTimeout = 5 * time.Second
	}
	client, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(cfg.Endpoint), otlptracegrpc.WithInsecure())
	if err != nil {
		return nil, fmt.Errorf("OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	res := resource.NewSchemaless(attribute.String("service.name", cfg.ServiceName))
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(client, sdktrace.WithBatchTimeout(cfg.BatchTimeout)),
		sdktrace.WithResource(res),
		// One trace per change: few enough to keep them all.
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithIDGenerator(bus.StageIDs{}),
	)
	bus.EnableTracing(tp)
	return &Exporter{provider: tp}, nil
}

// Shutdown turns stage spans off and sends the queued spans, waiting at
// most until ctx ends.
func (e *Exporter) Shutdown(ctx context.Context) error {
	bus.EnableTracing(nil)
	return e.provider.Shutdown(ctx)
}
