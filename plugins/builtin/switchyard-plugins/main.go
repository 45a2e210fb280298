// Command switchyard-plugins serves Switchyard's built-in annotation
// plugins, one per process, as `switchyard-plugins plugin NAME`: the
// annotations stage starts it when it lies next to the switchyard binary
// (`make build` and the container image put it there). It links the
// plugins and the SDK only, not the controller, so each plugin process
// starts faster and holds less memory than `switchyard plugin NAME`.
//
//	go build -o bin/switchyard-plugins ./plugins/builtin/switchyard-plugins
package main

import (
	"fmt"
	"os"

	"switchyard.dev/switchyard/plugins/builtin"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != "plugin" {
		fmt.Fprintf(os.Stderr, "usage: %s plugin NAME (started by the annotations stage)\n", builtin.BinaryName)
		os.Exit(2)
	}
	if err := builtin.Serve(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", builtin.BinaryName, err)
		os.Exit(1)
	}
}
