package features

import (
	"fmt"
	"regexp"
)

// Tracing is the opentelemetry plugin's group: enable-opentelemetry,
// opentelemetry-trust-incoming-span and opentelemetry-operation-name of
// an Ingress, which override the controller ConfigMap's keys of the same
// names for its locations. Requests are traced in Lua
// (lua/switchyard/tracing.lua); nothing of it is an NGINX directive.
type Tracing struct {
	// Enabled is enable-opentelemetry: false turns tracing off for the
	// Ingress even when the ConfigMap turns it on.
	Enabled bool `json:"enabled"`
	// TrustIncomingSpan is opentelemetry-trust-incoming-span; nil keeps
	// the ConfigMap's.
	TrustIncomingSpan *bool `json:"trustIncomingSpan,omitempty"`
	// OperationName is opentelemetry-operation-name; "" keeps the
	// ConfigMap's.
	OperationName string `json:"operationName,omitempty"`
}

// OperationNameVariables are the NGINX variables an operation name may
// use: what names a request's route, never a header, cookie or query
// string (the name is sent to the collector as it is). tracing.lua holds
// the same list.
var OperationNameVariables = []string{
	"request_method", "uri", "host", "server_name", "scheme", "server_port", "status",
	"namespace", "ingress_name", "service_name", "service_port", "location_path", "proxy_upstream_name",
}

// OperationNamePattern is a whole operation name: letters, digits, spaces
// and . _ / : - , plus the variables above as $name, at most
// 256 bytes (MaxOperationName). ingress-nginx takes any text; a quote, a
// brace or another variable here is refused.
var OperationNamePattern = regexp.MustCompile(`^([A-Za-z0-9 ._/:,-]|\$(` + variableAlternatives() + `)\b)*$`)

// MaxOperationName bounds an operation name.
const MaxOperationName = 256

func variableAlternatives() string {
	out := ""
	for i, v := range OperationNameVariables {
		if i > 0 {
			out += "|"
		}
		out += v
	}
	return out
}

// ValidOperationName says whether name is an operation name Switchyard
// writes ("" included: the default).
func ValidOperationName(name string) bool {
	return len(name) <= MaxOperationName && OperationNamePattern.MatchString(name)
}

func (t *Tracing) validate() error {
	if t == nil {
		return nil
	}
	if !ValidOperationName(t.OperationName) {
		return fmt.Errorf("operationName %q: want letters, digits, spaces, . _ / : , - and the variables $%v, at most %d bytes",
			t.OperationName, OperationNameVariables, MaxOperationName)
	}
	return nil
}
