package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"switchyard.dev/switchyard/bus"
)

// pipelineOnce runs stages on an embedded bus in a temporary state
// directory until the last of them has published its first whole table,
// hands that table to done, stops the stages, and then lets inspect read any
// stage's table (the bus outlives the stages). render and check share it,
// so both judge input exactly as run does.
func pipelineOnce(o *options, timeout time.Duration, stages []string,
	done func(map[string][]byte) error, inspect func(context.Context, *bus.Conn) error) error {
	log, err := o.logger()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "switchyard-"+stages[len(stages)-1]+"-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	o.stateDir = tmp
	embedded, err := startBus(o)
	if err != nil {
		return err
	}
	defer embedded.Shutdown()

	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	stagesDone := make(chan error, 1)
	go func() { stagesDone <- runStages(ctx, o, embedded, stages, log) }()

	conn, err := embedded.Connect("switchyard-once")
	if err != nil {
		return err
	}
	defer conn.Close()
	got := false
	err = bus.Follow(ctx, conn, stages[len(stages)-1], func(_ context.Context, snap bus.Snapshot) error {
		// The first snapshot is the whole table.
		got = true
		cancel()
		return done(snap.Puts)
	})
	<-stagesDone
	if err != nil {
		return err
	}
	if !got {
		return fmt.Errorf("the %s stage published nothing within %s", stages[len(stages)-1], timeout)
	}
	readCtx, cancelRead := context.WithTimeout(context.Background(), timeout)
	defer cancelRead()
	return inspect(readCtx, conn)
}
