// Package builtin lists the annotation plugins the switchyard binary
// serves itself (`switchyard plugin NAME`), each in its own process like a
// third-party plugin, so that one `go build` gives a complete product.
package builtin

import (
	"maps"
	"slices"

	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/builtin/auth"
	"switchyard.dev/switchyard/plugins/builtin/balancing"
	"switchyard.dev/switchyard/plugins/builtin/canary"
	"switchyard.dev/switchyard/plugins/builtin/compat"
	"switchyard.dev/switchyard/plugins/builtin/ratelimit"
	"switchyard.dev/switchyard/plugins/builtin/redirect"
	"switchyard.dev/switchyard/plugins/builtin/rewrite"
)

// registry maps a plugin's name to its constructor.
var registry = map[string]func() plugins.Plugin{
	"canary":    canary.New,
	"auth":      auth.New,
	"compat":    compat.New,
	"ratelimit": ratelimit.New,
	"redirect":  redirect.New,
	"rewrite":   rewrite.New,
	"balancing": balancing.New,
}

// Names returns the built-in plugins' names, sorted.
func Names() []string { return slices.Sorted(maps.Keys(registry)) }

// Get returns the built-in plugin name.
func Get(name string) (plugins.Plugin, bool) {
	newPlugin, ok := registry[name]
	if !ok {
		return nil, false
	}
	return newPlugin(), true
}

// Descriptions describes every built-in plugin, in name order, without
// starting one: the host knows what each owns even if its process fails.
func Descriptions() []plugins.Description {
	descs := make([]plugins.Description, 0, len(registry))
	for _, name := range Names() {
		descs = append(descs, registry[name]().Describe())
	}
	return descs
}
