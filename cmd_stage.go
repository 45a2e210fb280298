package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// stageCommand runs one stage alone, for a deployment with one stage per
// Deployment on an external NATS. The code is the same as in `run`.
func stageCommand(args []string) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		return fmt.Errorf("usage: switchyard stage NAME --nats URL [flags]; stages: %v, and %s (the admission webhook)", bus.Stages, bus.StageWebhook)
	}
	name := args[0]
	var o options
	fs := flag.NewFlagSet("stage "+name, flag.ContinueOnError)
	o.register(fs)
	natsURL := fs.String("nats", "nats://127.0.0.1:4222", "URL of the NATS server the stages share")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	log, err := o.logger()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if err := o.setMemoryLimit(log); err != nil {
		return err
	}
	conn, err := bus.Connect(*natsURL, "switchyard-"+name)
	if err != nil {
		return err
	}
	defer conn.Close()
	stage, err := o.newStage(name, conn, log)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serveStageProcessMetrics(ctx, &o, name, *natsURL, log); err != nil {
		return err
	}
	if o.profilingAddr != "" {
		go serveProfiling(ctx, o.profilingAddr, log)
	}
	log.Info("stage running", zap.String("stage", name), zap.String("nats", *natsURL))
	return stage.Run(ctx)
}
