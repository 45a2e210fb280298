package translator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// customHeadersKey is the annotation, relative to the prefix, naming a
// ConfigMap of the Ingress's namespace whose data are response headers, as
// in ingress-nginx. The translator reads the ConfigMap (it has every
// object); the headers plugin owns the key and the annotations stage adds
// the headers to the Ingress's locations.
const customHeadersKey = "custom-headers"

// addCustomHeaders resolves the custom-headers annotation into
// p.info.CustomHeaders. A ConfigMap that is missing, of another namespace,
// or holding one invalid header rejects the Ingress, as ingress-nginx
// denies its locations: response headers are often security headers, and
// serving without them would be a silent downgrade.
func (p *ingressPlan) addCustomHeaders(t *Translator, ing *networkingv1.Ingress) {
	annotation := t.cfg.annotationsPrefix() + "/" + customHeadersKey
	value, ok := ing.Annotations[annotation]
	if !ok {
		return
	}
	field := "metadata.annotations[" + annotation + "]"
	id, ok := bus.ParseSecretRef(ing.Namespace, strings.TrimSpace(value)) // "name" or "namespace/name"
	if !ok || !strings.HasPrefix(id, ing.Namespace+"/") {
		p.reject(field, "InvalidAnnotation", "%s: %s is not the name of a ConfigMap of namespace %s", annotation, clipQuoted(value), ing.Namespace)
		return
	}
	p.configMaps = append(p.configMaps, id)
	cm, found := t.objs.configMaps[id]
	if !found {
		p.reject(field, "ConfigMapNotFound", "%s: ConfigMap %s is not found; the Ingress is not served until it exists", annotation, id)
		return
	}
	headers, err := checkHeaders(cm.Data)
	if err != nil {
		p.reject(field, "InvalidAnnotation", "%s: ConfigMap %s: %v", annotation, id, err)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		p.info.CustomHeaders = append(p.info.CustomHeaders, bus.Header{Name: name, Value: headers[name]})
	}
}

// reject marks the Ingress rejected with a Problem.
func (p *ingressPlan) reject(field, reason, format string, args ...any) {
	p.info.Rejected = true
	p.info.Problems = append(p.info.Problems, bus.Problem{Field: field, Reason: reason, Message: fmt.Sprintf(format, args...)})
}
