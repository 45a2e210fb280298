package renderer

import (
	"encoding/json"
	"maps"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// TestEnableOCSPMarksEveryCertificate: turning enable-ocsp on or off puts
// every certificate again with the flag, and nothing else changes for it
// (stapling is Lua's: no file, no reload).
func TestEnableOCSPMarksEveryCertificate(t *testing.T) {
	m := harness.ReadModel(t, "testdata/tls.model.json")
	entries, err := m.Entries()
	if err != nil {
		t.Fatal(err)
	}
	r := NewRenderer(DefaultConfig())
	if _, errs := r.Update(entries, nil); len(errs) > 0 {
		t.Fatal(errs)
	}
	key := bus.Key(bus.KindCertificate, "default", "secure-tls")
	for _, on := range []bool{true, false} {
		s := *m.Settings
		s.EnableOCSP = on
		out := putSettings(t, r, s)
		var c LuaCertificate
		if err := json.Unmarshal(out.Puts[key], &c); err != nil {
			t.Fatalf("enable-ocsp %v: certificate not put again: %v", on, err)
		}
		if c.OCSP != on || c.PEM == "" {
			t.Errorf("enable-ocsp %v: certificate put with ocsp %v", on, c.OCSP)
		}
	}
	// The files are the same either way.
	off, _ := Render(DefaultConfig(), m)
	m.Settings.EnableOCSP = true
	on, _ := Render(DefaultConfig(), m)
	if !maps.Equal(off.Files, on.Files) {
		t.Error("enable-ocsp changes the configuration files")
	}
}
