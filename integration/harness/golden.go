package harness

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// Golden compares got with the golden file at path and returns the
// file's content; with update it writes got there first.
func Golden(t testing.TB, path string, got []byte, update bool) []byte {
	t.Helper()
	if update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (rerun with -update if intended):\n%s", path, got)
	}
	return want
}

// ReadModel decodes a model (bus.Model as JSON, the form of the
// translator's goldens and the renderer's inputs).
func ReadModel(t testing.TB, path string) bus.Model {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := bus.NewModel()
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	// A hand-written model names only the settings it is about: the rest
	// are the defaults, as the translator would publish them, so a setting
	// added later needs no edit of every fixture.
	if m.Settings != nil {
		var probe struct {
			Settings json.RawMessage `json:"settings"`
		}
		if err := json.Unmarshal(data, &probe); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		s := bus.DefaultSettings()
		if err := json.Unmarshal(probe.Settings, &s); err != nil {
			t.Fatalf("%s: settings: %v", path, err)
		}
		m.Settings = &s
	}
	return m
}
