package main

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/internal/nginx"
	"switchyard.dev/switchyard/internal/otelexport"
)

// startRequestSpans drains the request spans NGINX records
// (lua/switchyard/tracing.lua) and exports them over OTLP, in the process
// that runs NGINX, until ctx ends. It is cheap while request tracing is
// off: one request a second over the unix socket.
func startRequestSpans(ctx context.Context, o *options, log *zap.Logger) error {
	prefix, err := o.prefix()
	if err != nil {
		return fmt.Errorf("request spans: %w", err)
	}
	socket := nginx.ControlSocketFor(prefix)
	o.requestSpans = otelexport.NewRequestSpans(socket, func(err error) {
		if errors.Is(err, otelexport.ErrExport) {
			log.Warn("request spans", zap.Error(err))
			return
		}
		// NGINX not (yet) running: every second until it is.
		log.Debug("request spans", zap.Error(err))
	})
	go o.requestSpans.Run(ctx)
	return nil
}
