package main

import "switchyard.dev/switchyard/plugins/builtin"

// pluginCommand serves one built-in annotation plugin; the annotations
// stage starts it as a child process, as it starts a third-party plugin,
// when the smaller switchyard-plugins binary is not next to this one.
func pluginCommand(args []string) error { return builtin.Serve(args) }
