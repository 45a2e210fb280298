package main

import (
	"fmt"
	"strings"

	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/builtin"
)

// pluginCommand serves one built-in annotation plugin; the annotations
// stage starts it as a child process, as it starts a third-party plugin.
func pluginCommand(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: switchyard plugin NAME (started by the annotations stage); plugins: %s", strings.Join(builtin.Names(), ", "))
	}
	p, ok := builtin.Get(args[0])
	if !ok {
		return fmt.Errorf("no built-in plugin %q; plugins: %s", args[0], strings.Join(builtin.Names(), ", "))
	}
	return plugins.Serve(p)
}
