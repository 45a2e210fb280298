package harness

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// Bus starts an embedded bus in a temporary directory and returns a
// connection to it named name; both end with the test.
func Bus(t testing.TB, name string) *bus.Conn {
	t.Helper()
	e, err := bus.StartEmbedded(bus.EmbeddedOptions{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Shutdown)
	conn, err := e.Connect(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(conn.Close)
	return conn
}

// Decode decodes the value a stage put under key (puts is a stage's
// output, bus.Output.Puts), failing the test when it is missing or is not
// a T.
func Decode[T any](t testing.TB, puts map[string][]byte, key string) *T {
	t.Helper()
	data, ok := puts[key]
	if !ok {
		t.Fatalf("%s not in the output; it holds %v", key, slices.Sorted(maps.Keys(puts)))
	}
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", key, err)
	}
	return v
}
