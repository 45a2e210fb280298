package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/nats-io/nats.go"
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
	replicas := fs.Int("nats-replicas", 1, "servers of the NATS cluster that keep each stream this stage creates or writes, on disk (3 on a three-node cluster: a lost node loses nothing); 1 keeps them in one server's memory")
	natsCA := fs.String("nats-ca", "", "PEM CA of the bus nodes' certificates (switchyard bus --tls-cert): connect with TLS only and verify the node")
	insecure := fs.Bool("nats-insecure", false, "connect without a bus identity (--nats-keys), to a NATS server that admits anyone: for development only")
	instance := fs.String("instance", defaultInstance(), "name of this process on the bus, in its messages and leases (default: $POD_NAME, else HOST-PID)")
	leaseDuration := fs.Duration("lease-duration", bus.DefaultLeaseDuration, "replicas of the watcher, translator, annotations and renderer stages take turns: one leads and publishes, the others stand by and take over after this long without a renewal")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if o.printVersionIfAsked() {
		return nil
	}
	auth, err := busIdentity(name, o.natsKeys, *natsCA, *insecure)
	if err != nil {
		return err
	}
	log, err := o.logger()
	if err != nil {
		return err
	}
	defer func() { _ = log.Sync() }()
	if err := o.checkIngressNginxFlags(log); err != nil {
		return err
	}
	if err := o.setMemoryLimit(log); err != nil {
		return err
	}
	if *leaseDuration < bus.MinLeaseDuration || *leaseDuration > bus.MaxLeaseDuration {
		return fmt.Errorf("--lease-duration %s: from %s to %s", *leaseDuration, bus.MinLeaseDuration, bus.MaxLeaseDuration)
	}
	if *replicas < 1 || *replicas > 5 {
		return fmt.Errorf("--nats-replicas %d: from 1 to 5 (JetStream's limit)", *replicas)
	}
	stopTracing, err := o.startTracing(context.Background(), log)
	if err != nil {
		return err
	}
	defer stopTracing()
	conn, err := bus.Connect(*natsURL, "switchyard-"+name, auth...)
	if err != nil {
		return err
	}
	conn.ReplicateStreams(*replicas)
	conn.SetInstance(*instance)
	o.instance = *instance
	defer conn.Close()
	// The flags are checked now, not when this replica first leads.
	stage, err := o.newStage(name, conn, log)
	if err != nil {
		return err
	}
	ctx, stop, err := o.shutdownContext(log)
	if err != nil {
		return err
	}
	defer stop()
	// A stage of its own keeps the start-up headroom until its first quiet
	// period after a burst, as the all-in-one does after an apply.
	started := make(chan struct{})
	go keepHeadroom(ctx, started, log)
	go releaseAfterBursts(ctx, started, log)
	if name == bus.StageApplier {
		if err := startRequestSpans(ctx, &o, log); err != nil {
			return err
		}
	}
	if err := serveStageProcessMetrics(ctx, &o, name, *natsURL, auth, log); err != nil {
		return err
	}
	if o.profilingAddr != "" {
		go serveProfiling(ctx, o.profilingAddr, log)
	}
	log.Info("stage running", zap.String("stage", name), zap.String("instance", *instance), zap.String("nats", *natsURL))
	if !bus.Leased(name) {
		// Every applier runs its own NGINX; the webhook publishes nothing.
		return stage.Run(ctx)
	}
	cfg := bus.LeaseConfig{Name: name, Holder: *instance, Duration: *leaseDuration, Log: log.Named(name)}
	return bus.RunWithLease(ctx, conn, cfg, func(ctx context.Context) error {
		if stage == nil { // a later term: start afresh from the bus
			if stage, err = o.newStage(name, conn, log); err != nil {
				return err
			}
		}
		defer func() { stage = nil }()
		return stage.Run(ctx)
	})
}

// defaultInstance names this process on the bus: the pod, or host and
// process id outside Kubernetes (two replicas on one host differ).
func defaultInstance() string {
	if pod := os.Getenv("POD_NAME"); pod != "" {
		return pod
	}
	host, err := os.Hostname()
	if err != nil {
		host = "switchyard"
	}
	return fmt.Sprintf("%s-%d", host, os.Getpid())
}

// busIdentity authenticates a connection as identity with its seed in
// keysDir, over TLS verified against caFile when there is one. Without
// keys it refuses, unless told the bus is open on purpose.
func busIdentity(identity, keysDir, caFile string, insecure bool) ([]nats.Option, error) {
	var opts []nats.Option
	if caFile != "" {
		// RootCAs also makes the client refuse a server that does not
		// offer TLS.
		opts = append(opts, nats.RootCAs(caFile))
	}
	if keysDir == "" {
		if insecure {
			return opts, nil
		}
		return nil, fmt.Errorf("--nats-keys DIR is needed to authenticate as %s on the bus (switchyard buskeys DIR creates the keys and the nats-server authorization); --nats-insecure connects without", identity)
	}
	auth, err := bus.ClientOptions(identity, bus.SeedFile(keysDir, identity))
	if err != nil {
		return nil, err
	}
	return append(opts, auth...), nil
}
