package translator

import (
	"strconv"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// defaultBackendKey is the annotation, relative to the prefix, naming a
// Service of the Ingress's namespace that serves the Ingress's requests
// while their Service has no ready endpoint, and its custom-http-errors
// pages (ingress-nginx's default-backend). The errors plugin owns the key
// and checks its value; the translator, which has the objects, turns the
// Service into a backend.
const defaultBackendKey = "default-backend"

// addAnnotationDefaultBackend plans the backend of the default-backend
// annotation: the Service's first port and its ready endpoints, as
// ingress-nginx. A missing Service is reported and planned with no
// endpoints: the Ingress stays served, its error pages answer 503.
func (p *ingressPlan) addAnnotationDefaultBackend(t *Translator, ing *networkingv1.Ingress) {
	annotation := t.cfg.annotationsPrefix() + "/" + defaultBackendKey
	value, ok := ing.Annotations[annotation]
	name := strings.TrimSpace(value)
	if !ok || !bus.ServiceNamePattern.MatchString(name) {
		return // the errors plugin reports a bad value
	}
	key := objectName(ing.Namespace, name)
	p.services = append(p.services, key)
	b := &bus.Backend{Name: bus.CustomDefaultBackendName(ing.Namespace, name),
		Service: bus.ServiceRef{Namespace: ing.Namespace, Name: name}, Endpoints: []bus.Endpoint{}}
	svc, found := t.objs.services[key]
	if !found || len(svc.Spec.Ports) == 0 {
		p.problem("metadata.annotations["+annotation+"]", "ServiceNotFound",
			"%s: Service %s does not exist or has no port; its error pages answer 503", annotation, key)
		p.addBackend(b)
		return
	}
	b.Service.Port = strconv.Itoa(int(svc.Spec.Ports[0].Port))
	b.Endpoints = t.objs.readyEndpoints(key, svc.Spec.Ports[0])
	p.addBackend(b)
}
