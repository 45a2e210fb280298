package bus

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestPipeRedo: a Redo is published with the last input's generation, a nil
// one publishes nothing, every published output reaches WithPublished, and
// the transform and the redos never run at the same time.
func TestPipeRedo(t *testing.T) {
	conn := startBus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var running sync.Mutex // held by whatever Pipe runs; TryLock fails on overlap
	overlap := make(chan string, 10)
	guard := func(what string) func() {
		if !running.TryLock() {
			overlap <- what
			return func() {}
		}
		return running.Unlock
	}
	transform := func(ctx context.Context, in Snapshot) (Output, error) {
		defer guard("transform")()
		time.Sleep(20 * time.Millisecond)
		return incremental(ctx, in)
	}
	redos := make(chan Redo)
	published := make(chan Output, 10)
	go func() {
		_ = Pipe(ctx, conn, StageWatcher, StageTranslator, zap.NewNop(), transform,
			WithRedos(redos), WithPublished(func(o Output) { published <- o }))
	}()
	states := followState(ctx, conn, StageTranslator)

	w := NewWriter(conn, StageWatcher)
	if _, err := w.Publish(ctx, Meta{Generation: 7}, map[string][]byte{"object.a": []byte("1")}); err != nil {
		t.Fatal(err)
	}
	waitState(t, states, map[string]string{"object.a": "1"})
	<-published

	redos <- func(context.Context) (*Output, error) { defer guard("nil redo")(); return nil, nil }
	redos <- func(context.Context) (*Output, error) {
		defer guard("redo")()
		return &Output{Puts: map[string][]byte{"object.r": []byte("redo")}}, nil
	}
	waitState(t, states, map[string]string{"object.a": "1", "object.r": "redo"})
	if o := <-published; string(o.Puts["object.r"]) != "redo" {
		t.Fatalf("published %+v, want the redo's output", o)
	}
	_, meta, err := ReadTable(ctx, conn, StageTranslator)
	if err != nil || meta.Generation != 7 {
		t.Fatalf("the redo's commit has generation %d (%v), want the last input's 7", meta.Generation, err)
	}
	select {
	case o := <-published:
		t.Fatalf("the nil redo published %+v", o)
	case what := <-overlap:
		t.Fatalf("%s ran while something else Pipe runs was running", what)
	default:
	}
}
