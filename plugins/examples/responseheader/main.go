// Command responseheader is an example third-party annotation plugin,
// built against the SDK alone. It owns plugins.example.com/response-header,
// whose value "Name: value" adds that header to every response of the
// Ingress.
//
//	go build -o /etc/switchyard/plugins/responseheader ./plugins/examples/responseheader
//	switchyard run --plugin-dir /etc/switchyard/plugins ...
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"switchyard.dev/switchyard/plugins"
)

const key = "plugins.example.com/response-header"

type responseHeader struct{}

func (responseHeader) Describe() plugins.Description {
	return plugins.Description{
		Name: "responseheader",
		Doc:  "Example third-party plugin: adds one response header.",
		Annotations: []plugins.Annotation{{
			Key: key,
			// A header name, a colon, and a value of visible characters
			// without quotes, backslashes, "$" or braces.
			Pattern: `[A-Za-z0-9-]{1,64}:[ ]*[A-Za-z0-9 !#%&'()*+,./:;<=>?@\[\]^_|~-]{1,512}`,
			Scope:   plugins.ScopeIngress,
			Risk:    plugins.RiskLow,
			Doc:     `"Name: value" adds the response header Name with that value to every response of the Ingress.`,
		}},
	}
}

// ApplyIngress is called for each Ingress that carries the annotation; its
// value already matched Pattern.
func (responseHeader) ApplyIngress(_ context.Context, in plugins.Ingress) (plugins.Features, []plugins.Error) {
	name, value, _ := strings.Cut(in.Annotations[key], ":")
	return plugins.Features{
		ResponseHeaders: []plugins.Header{{Name: name, Value: strings.TrimSpace(value)}},
	}, nil
}

func main() {
	if err := plugins.Serve(plugins.PerIngress(responseHeader{})); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
