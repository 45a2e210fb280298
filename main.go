// Command switchyard is a Kubernetes ingress controller that reads
// ingress-nginx's annotations and runs NGINX with Lua as its data plane.
// One binary runs every stage, a test echo backend, and the tools around them.
package main

import (
	"fmt"
	"os"
	"sort"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

type command struct {
	summary string
	run     func(args []string) error
}

var commands = map[string]command{
	"run":         {"run everything in one process: embedded NATS, all stages, a managed NGINX", runCommand},
	"buskeys":     {"create the bus identities' NKeys and a nats-server authorization for them (needed by --nats-listen and split mode)", busKeysCommand},
	"bus":         {"run a node of split mode's NATS cluster (JetStream, the buskeys identities, authenticated routes)", busCommand},
	"certgen":     {"create the admission webhook's certificate Secret, or patch it into the webhook's caBundle (install Jobs)", certgenCommand},
	"check":       {"say for every Ingress and ConfigMap key whether Switchyard serves it as ingress-nginx does (exit 0 only if all)", checkCommand},
	"render":      {"print the nginx.conf and Lua payloads that run would apply, without NGINX", renderCommand},
	"stage":       {"run one stage alone against an external NATS (--nats URL)", stageCommand},
	"trace":       {"print every message on the subject graph with each stage's latency", traceCommand},
	"echo":        {"a small HTTP backend that answers with what it received, as JSON", echoCommand},
	"plugin":      {"serve a built-in annotation plugin (started by the annotations stage)", pluginCommand},
	"annotations": {"print the documentation of every annotation, from the plugins", annotationsCommand},
	"version":     {"print the version", func([]string) error { fmt.Println("switchyard", version); return nil }},
}

func main() {
	if len(os.Args) < 2 || commands[os.Args[1]].run == nil {
		usage()
		os.Exit(2)
	}
	if err := commands[os.Args[1]].run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "switchyard %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: switchyard COMMAND [flags]\n\ncommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-12s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(os.Stderr, "\nRun 'switchyard COMMAND -h' for a command's flags.")
}
