package renderer

// Per-request metrics (lua/switchyard/metrics.lua) label a request with
// what its location serves, read from variables each location sets, as
// ingress-nginx's locations do: $namespace, $ingress_name, $service_name,
// $service_port and $location_path (the Ingress path, never the request
// URI, so the labels are as many as the locations). The error pages of
// custom-http-errors send the same variables to the error backend.

import (
	"fmt"
	"regexp"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// metricLabels are what a location serves besides its Ingress: the
// Ingress path and the backend's Service.
type metricLabels struct {
	path, service, servicePort string
}

// labelsOf are l's labels. A location no Ingress asked for (the catch-all's
// "/") has none, as in ingress-nginx.
func labelsOf(l bus.Location) metricLabels {
	if l.Ingress == "" {
		return metricLabels{}
	}
	return metricLabels{path: l.Path, service: l.Service, servicePort: l.ServicePort}
}

// labelsView is what a location sets for the metrics, each value quoted.
type labelsView struct {
	Namespace, IngressName, Service, ServicePort, Path string
}

// newLabelsView resolves the variables of a location owned by ingress
// ("namespace/name", or "" for none).
func newLabelsView(ingress string, l metricLabels) (labelsView, error) {
	var ns, name string
	if ingress != "" {
		if !ingressIDPattern.MatchString(ingress) {
			return labelsView{}, fmt.Errorf("invalid Ingress %q", ingress)
		}
		ns, name, _ = strings.Cut(ingress, "/")
	}
	if l.service != "" && !serviceLabelPattern.MatchString(l.service) {
		return labelsView{}, fmt.Errorf("invalid Service name %q", l.service)
	}
	if l.servicePort != "" && !serviceLabelPattern.MatchString(l.servicePort) {
		return labelsView{}, fmt.Errorf("invalid Service port %q", l.servicePort)
	}
	var v labelsView
	var err error
	for _, f := range []struct {
		dst *string
		val string
	}{{&v.Namespace, ns}, {&v.IngressName, name}, {&v.Service, l.service}, {&v.ServicePort, l.servicePort}} {
		if *f.dst, err = quote(f.val); err != nil {
			return labelsView{}, err
		}
	}
	v.Path, err = quoteLiteral(l.path)
	return v, err
}

// serviceLabelPattern: a Service name (a DNS label) or a port, by name or
// number; the same characters a backend name (namespace-service-port) has.
var serviceLabelPattern = regexp.MustCompile(`^[a-z0-9][-a-z0-9.]{0,252}$`)

// dollarVariable holds a literal "$" (geo does not interpolate its
// values; nginx.conf.tmpl declares it): a regex path may end with "$",
// which a set would otherwise read as a variable.
const dollarVariable = "${switchyard_dollar}"

// quoteLiteral quotes s so that NGINX's set stores it unchanged: "\" is
// escaped and "$" is dollarVariable. What could end the string or the line
// is refused.
func quoteLiteral(s string) (string, error) {
	if strings.ContainsAny(s, "\"\r\n\x00") {
		return "", fmt.Errorf("refusing to write %q into nginx.conf", s)
	}
	s = strings.ReplaceAll(s, `\`, `\\`)
	return `"` + strings.ReplaceAll(s, "$", dollarVariable) + `"`, nil
}
