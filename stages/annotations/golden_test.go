package annotations

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/plugins/builtin"
)

var updateGolden = flag.Bool("update", false, "rewrite testdata/*.golden.json")

// TestGolden runs the annotations stage as `switchyard run` does, on a
// real bus with the real built-in plugins in their own processes (the
// switchyard binary's `plugin NAME`): each testdata/*.model.json is the
// translator's model (what stages/translator's goldens hold), published as
// the translator's table; the stage's table, decoded as a model, must
// equal testdata/*.golden.json. Run with -update to accept new output.
func TestGolden(t *testing.T) {
	inputs, _ := filepath.Glob("testdata/*.model.json")
	if len(inputs) == 0 {
		t.Fatal("no golden inputs")
	}
	self := harness.Binary(t)
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".model.json")
		t.Run(name, func(t *testing.T) {
			got := annotateThroughStage(t, self, harness.ReadModel(t, in))
			harness.Golden(t, filepath.Join("testdata", name+".golden.json"), got, *updateGolden)
		})
	}
}

// annotateThroughStage publishes m as the translator's table, runs the
// stage with the built-in plugins until it has published that generation,
// and returns its table as indented model JSON.
func annotateThroughStage(t *testing.T, self string, m bus.Model) []byte {
	t.Helper()
	conn := harness.Bus(t, "annotations-golden")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	entries, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	const generation = 1
	if _, err := bus.NewWriter(conn, bus.StageTranslator).Publish(ctx, bus.Meta{Generation: generation}, entries); err != nil {
		t.Fatal(err)
	}
	stageCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() {
		stopped <- New(conn, Config{Builtins: builtin.Descriptions(), Self: self}, zaptest.NewLogger(t)).Run(stageCtx)
	}()
	defer func() {
		stop()
		<-stopped // the plugin processes are gone when Run returns
	}()

	var table map[string][]byte
	errDone := errors.New("done")
	err = bus.Follow(ctx, conn, bus.StageAnnotations, func(_ context.Context, s bus.Snapshot) error {
		if table == nil || s.Full {
			table = map[string][]byte{}
		}
		for _, key := range s.Deletes {
			delete(table, key)
		}
		for key, data := range s.Puts {
			table[key] = data
		}
		if s.Meta.Generation >= generation {
			return errDone
		}
		return nil
	})
	if !errors.Is(err, errDone) {
		t.Fatalf("waiting for the stage's table: %v", err)
	}
	out, err := bus.ModelFromEntries(table)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(data, '\n')
}
