// Package plugintest helps plugin authors test their parsers.
package plugintest

import (
	"context"
	"testing"

	"switchyard.dev/switchyard/plugins"
)

// Apply calls p.Apply with batch, as the host would but in-process, and
// fails t if it returns an error.
func Apply(t testing.TB, p plugins.Plugin, batch []plugins.Ingress) []plugins.Result {
	t.Helper()
	results, err := p.Apply(context.Background(), batch)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	return results
}

// ErrorKeys splits errs into the keys of rejecting errors and of warnings,
// in order, and fails t for an error without a message: a person reads it.
func ErrorKeys(t testing.TB, errs []plugins.Error) (rejecting, warnings []string) {
	t.Helper()
	for _, e := range errs {
		if e.Message == "" {
			t.Errorf("error for %s has no message", e.Key)
		}
		if e.Warning {
			warnings = append(warnings, e.Key)
		} else {
			rejecting = append(rejecting, e.Key)
		}
	}
	return rejecting, warnings
}
