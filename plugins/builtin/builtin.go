// Package builtin lists Switchyard's built-in annotation plugins. They run
// out of the controller's process, like third-party plugins: all of them
// in one process, started as `BIN plugin --all` (one Go runtime's memory
// instead of one per plugin), or each in its own as `BIN plugin NAME`,
// where BIN is the small switchyard-plugins binary (BinaryName, built
// from ./plugins/builtin/switchyard-plugins) when it sits next to the
// switchyard binary, and switchyard itself otherwise: one `go build .`
// still gives a complete product, the second binary saves memory and
// start-up time.
package builtin

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/builtin/access"
	"switchyard.dev/switchyard/plugins/builtin/auth"
	"switchyard.dev/switchyard/plugins/builtin/authtls"
	"switchyard.dev/switchyard/plugins/builtin/balancing"
	"switchyard.dev/switchyard/plugins/builtin/canary"
	"switchyard.dev/switchyard/plugins/builtin/cors"
	"switchyard.dev/switchyard/plugins/builtin/errors"
	"switchyard.dev/switchyard/plugins/builtin/headers"
	"switchyard.dev/switchyard/plugins/builtin/logs"
	"switchyard.dev/switchyard/plugins/builtin/mirror"
	"switchyard.dev/switchyard/plugins/builtin/modsecurity"
	"switchyard.dev/switchyard/plugins/builtin/opentelemetry"
	"switchyard.dev/switchyard/plugins/builtin/passthrough"
	"switchyard.dev/switchyard/plugins/builtin/proxy"
	"switchyard.dev/switchyard/plugins/builtin/ratelimit"
	"switchyard.dev/switchyard/plugins/builtin/redirect"
	"switchyard.dev/switchyard/plugins/builtin/rewrite"
	"switchyard.dev/switchyard/plugins/builtin/server"
	"switchyard.dev/switchyard/plugins/builtin/upstream"
)

// registry maps a plugin's name to its constructor.
var registry = map[string]func() plugins.Plugin{
	"canary":        canary.New,
	"access":        access.New,
	"auth":          auth.New,
	"authtls":       authtls.New,
	"cors":          cors.New,
	"mirror":        mirror.New,
	"modsecurity":   modsecurity.New,
	"opentelemetry": opentelemetry.New,
	"errors":        errors.New,
	"headers":       headers.New,
	"logs":          logs.New,
	"passthrough":   passthrough.New,
	"ratelimit":     ratelimit.New,
	"redirect":      redirect.New,
	"rewrite":       rewrite.New,
	"balancing":     balancing.New,
	"proxy":         proxy.New,
	"server":        server.New,
	"upstream":      upstream.New,
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

// BinaryName is the file name of the binary that serves only the built-in
// plugins, looked for next to the switchyard binary.
const BinaryName = "switchyard-plugins"

// AllFlag, as `plugin --all`, serves every built-in plugin in one process.
const AllFlag = "--all"

// Serve serves the built-in plugin args[0], or with AllFlag all of them in
// one process (plugins.ServeSet), until the host stops it: the `plugin
// NAME` command of both binaries.
func Serve(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: plugin NAME|%s (started by the annotations stage); plugins: %s", AllFlag, strings.Join(Names(), ", "))
	}
	if args[0] == AllFlag {
		set := map[string]plugins.Plugin{}
		for name, newPlugin := range registry {
			set[name] = newPlugin()
		}
		return plugins.ServeSet(set)
	}
	p, ok := Get(args[0])
	if !ok {
		return fmt.Errorf("no built-in plugin %q; plugins: %s", args[0], strings.Join(Names(), ", "))
	}
	return plugins.Serve(p)
}
