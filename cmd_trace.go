package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"

	"switchyard.dev/switchyard/bus"
)

// traceCommand prints every message on the subject graph: subject, key,
// generation, producing stage and instance, an apply result's outcome, the time since the change entered the
// watcher, and the trace and span of its traceparent (the IDs of the spans
// --otlp-endpoint exports). It reads the headers-only copies each stage
// sends of its messages (bus.TraceRoot), so values, which may hold Secret data,
// never reach it.
func traceCommand(args []string) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	natsURL := fs.String("nats", "nats://127.0.0.1:4222", "URL of the bus (run with --nats-listen to expose the embedded one)")
	count := fs.Int("count", 0, "exit after this many messages (0: run until interrupted)")
	keys := fs.String("nats-keys", "", "directory of the bus identities' seeds (switchyard buskeys): trace authenticates with DIR/trace.nk")
	ca := fs.String("nats-ca", "", "PEM CA of the bus nodes' certificates: connect with TLS only")
	if err := fs.Parse(args); err != nil {
		return err
	}
	auth, err := busIdentity(bus.IdentityTrace, *keys, *ca, true)
	if err != nil {
		return err
	}
	nc, err := nats.Connect(*natsURL, append(auth, nats.Name("switchyard-trace"))...)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", *natsURL, err)
	}
	defer nc.Close()
	msgs := make(chan *nats.Msg, 4096)
	// The streams' headers-only copies: trace never receives a value.
	sub, err := nc.ChanSubscribe(bus.TraceRoot+".>", msgs)
	if err != nil {
		return err
	}
	defer func() { _ = sub.Unsubscribe() }()
	// The header says "listening": the server has the subscription once
	// the flush returns, so nothing published after it is missed.
	if err := nc.Flush(); err != nil {
		return fmt.Errorf("subscribe on %s: %w", *natsURL, err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("%-12s %-11s %-10s %-10s %-49s %s\n", "TIME", "STAGE", "GEN", "LATENCY", "TRACE / SPAN", "SUBJECT / KEY")
	for seen := 0; *count == 0 || seen < *count; seen++ {
		select {
		case <-ctx.Done():
			return nil
		case m := <-msgs:
			fmt.Println(traceLine(m, time.Now()))
		}
	}
	return nil
}

func traceLine(m *nats.Msg, now time.Time) string {
	meta := bus.MetaFromHeader(m.Header)
	latency := "-"
	if !meta.Ingest.IsZero() {
		latency = now.Sub(meta.Ingest).Round(10 * time.Microsecond).String()
	}
	key := strings.TrimPrefix(m.Subject, bus.TraceSubject(bus.StageSubject(meta.Stage))+".")
	if m.Header.Get(bus.HeaderOp) == bus.OpDelete {
		key += " (deleted)"
	}
	if outcome := m.Header.Get(bus.HeaderResult); outcome != "" {
		key += " " + outcome
	}
	// With several replicas of a stage: which one published (the
	// applier that failed, the translator that led).
	if meta.Instance != "" {
		key += " from " + meta.Instance
	}
	span := "-"
	if meta.Trace.TraceID != "" {
		span = meta.Trace.TraceID + "/" + meta.Trace.SpanID
	}
	return fmt.Sprintf("%-12s %-11s %-10d %-10s %-49s %s", now.Format("15:04:05.000"), meta.Stage, meta.Generation, latency, span, key)
}
