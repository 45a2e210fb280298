// Package plugintest helps plugin authors test their parsers.
package plugintest

import (
	"testing"

	"switchyard.dev/switchyard/plugins"
)

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
