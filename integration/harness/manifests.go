package harness

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ClassYAML is the IngressClass the tests' Ingresses name.
const ClassYAML = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: switchyard}
spec: {controller: switchyard.dev/ingress-controller}
`

// ServiceYAML is a Service with one port named http (port 80) and an
// EndpointSlice with the given ready endpoints on 127.0.0.1.
func ServiceYAML(ns, name string, ports ...int) string {
	var eps strings.Builder
	for _, p := range ports {
		// One slice per port: the manifests source has no cluster to
		// enforce one port per slice, but slices name ports, not pods.
		fmt.Fprintf(&eps, `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %[2]s-%[3]d
  namespace: %[1]s
  labels: {kubernetes.io/service-name: %[2]s}
addressType: IPv4
ports: [{name: http, port: %[3]d}]
endpoints: [{addresses: [127.0.0.1], conditions: {ready: true}}]
`, ns, name, p)
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata: {name: %s, namespace: %s}
spec:
  ports: [{name: http, port: 80}]
%s`, name, ns, eps.String())
}

// Path is one path of an Ingress rule.
type Path struct {
	Path, Type, Service string
}

// IngressYAML is an Ingress of class switchyard with one host.
func IngressYAML(ns, name, host string, paths ...Path) string {
	var b strings.Builder
	fmt.Fprintf(&b, `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: %s, namespace: %s}
spec:
  ingressClassName: switchyard
  rules:
  - host: %q
    http:
      paths:
`, name, ns, host)
	for _, p := range paths {
		fmt.Fprintf(&b, "      - {path: %q, pathType: %s, backend: {service: {name: %s, port: {name: http}}}}\n", p.Path, p.Type, p.Service)
	}
	return b.String()
}

// AnnotatedIngressYAML is IngressYAML with annotations.
func AnnotatedIngressYAML(ns, name, host string, annotations map[string]string, paths ...Path) string {
	var b strings.Builder
	fmt.Fprintf(&b, "metadata:\n  name: %s\n  namespace: %s\n  annotations:\n", name, ns)
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		fmt.Fprintf(&b, "    %s: %q\n", k, annotations[k])
	}
	return strings.Replace(IngressYAML(ns, name, host, paths...),
		fmt.Sprintf("metadata: {name: %s, namespace: %s}\n", name, ns), b.String(), 1)
}
