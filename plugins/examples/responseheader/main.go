// Command responseheader is an example third-party annotation plugin,
// built against the SDK alone. It owns plugins.example.com/response-header,
// whose value "Name: value" adds that header to every response of the
// Ingress.
//
//	go build -o /etc/switchyard/plugins/responseheader ./plugins/examples/responseheader
//	switchyard run --plugin-dir /etc/switchyard/plugins ...
package main

import (
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

func (responseHeader) Apply(batch []plugins.Ingress) []plugins.Result {
	results := make([]plugins.Result, 0, len(batch))
	for _, in := range batch {
		r := plugins.Result{Namespace: in.Namespace, Name: in.Name}
		name, value, _ := strings.Cut(in.Annotations[key], ":")
		r.Features.ResponseHeaders = []plugins.Header{{Name: name, Value: strings.TrimSpace(value)}}
		results = append(results, r)
	}
	return results
}

func main() { plugins.Serve(responseHeader{}) }
