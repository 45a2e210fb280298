package renderer

// Per-request metrics (lua/switchyard/metrics.lua) label a request with
// what its location serves, read from variables each location sets, as
// ingress-nginx's locations do: $namespace, $ingress_name, $service_name,
// $service_port and $location_path (the Ingress path, never the request
// URI, so the labels are as many as the locations). The error pages of
// custom-http-errors send the same variables to the error backend.

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
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
	ns, name, err := checkLabels(ingress, l)
	if err != nil {
		return labelsView{}, err
	}
	var v labelsView
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

// checkLabels checks the labels of a location owned by ingress
// ("namespace/name", or "" for none) other than its path, and splits the
// Ingress: the values both newLabelsView and luaLabels write.
func checkLabels(ingress string, l metricLabels) (ns, name string, err error) {
	if ingress != "" {
		if !ingressIDPattern.MatchString(ingress) {
			return "", "", fmt.Errorf("invalid Ingress %q", ingress)
		}
		ns, name, _ = strings.Cut(ingress, "/")
	}
	if l.service != "" && !serviceLabelPattern.MatchString(l.service) {
		return "", "", fmt.Errorf("invalid Service name %q", l.service)
	}
	if l.servicePort != "" && !serviceLabelPattern.MatchString(l.servicePort) {
		return "", "", fmt.Errorf("invalid Service port %q", l.servicePort)
	}
	return ns, name, nil
}

// luaLabels are a location's labels as Lua literals for balancer.rewrite:
// path, namespace, Ingress and Service joined by metrics.lua's separator
// (byte 1, written "\001": a digit after "\1" would extend the escape),
// then the host label (the server's host; "_" for the catch-all). The
// log phase takes them from the request's balancer state instead of
// reading the variables newLabelsView sets, five reads a request. They are
// the same values: checked here as there.
func luaLabels(ingress string, l metricLabels, host string) (labels, hostArg string, err error) {
	ns, name, err := checkLabels(ingress, l)
	if err != nil {
		return "", "", err
	}
	if strings.ContainsFunc(l.path, func(r rune) bool { return r == '"' || r < 0x20 || r == 0x7f }) {
		return "", "", fmt.Errorf("refusing to write path %q into a Lua literal", l.path)
	}
	path := strings.ReplaceAll(l.path, `\`, `\\`)
	if hostArg, err = luaString(host); err != nil {
		return "", "", err
	}
	return `"` + strings.Join([]string{path, ns, name, l.service}, `\001`) + `"`, hostArg, nil
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

// MetricsBuckets are the per-request histograms' bucket bounds, as
// ingress-nginx's flags: time (the durations), length (request and
// response size) and size (bytes sent).
type MetricsBuckets struct {
	Time, Length, Size []float64
}

// maxBuckets bounds a bucket list: every bucket is a dict key per series.
const maxBuckets = 32

// luaInit is metrics.lua's init argument: the lists set, as a Lua table
// of numbers, or "" for all defaults.
func (b MetricsBuckets) luaInit() (string, error) {
	var parts []string
	for _, l := range []struct {
		name   string
		bounds []float64
	}{{"time", b.Time}, {"length", b.Length}, {"size", b.Size}} {
		if l.bounds == nil {
			continue
		}
		if err := checkBuckets(l.bounds); err != nil {
			return "", fmt.Errorf("%s buckets: %w", l.name, err)
		}
		nums := make([]string, len(l.bounds))
		for i, v := range l.bounds {
			nums[i] = strconv.FormatFloat(v, 'g', -1, 64)
		}
		parts = append(parts, l.name+" = { "+strings.Join(nums, ", ")+" }")
	}
	if len(parts) == 0 {
		return "", nil
	}
	return "{ " + strings.Join(parts, ", ") + " }", nil
}

// checkBuckets: finite, increasing, at least one and at most maxBuckets.
func checkBuckets(bounds []float64) error {
	if len(bounds) == 0 || len(bounds) > maxBuckets {
		return fmt.Errorf("want 1 to %d bounds, got %d", maxBuckets, len(bounds))
	}
	for i, v := range bounds {
		if math.IsNaN(v) || math.IsInf(v, 0) || (i > 0 && v <= bounds[i-1]) {
			return fmt.Errorf("bounds must be finite and increasing: %v", bounds)
		}
	}
	if !slices.IsSorted(bounds) {
		return fmt.Errorf("bounds must be increasing: %v", bounds)
	}
	return nil
}
