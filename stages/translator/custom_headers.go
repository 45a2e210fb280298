package translator

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
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
	data, annotation, id, ok := p.annotationConfigMap(t, ing, customHeadersKey)
	if !ok {
		return
	}
	headers, err := checkHeaders(data)
	if err != nil {
		p.reject(annotationField(annotation), "InvalidAnnotation", "%s: ConfigMap %s: %v", annotation, id, err)
		return
	}
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		p.info.CustomHeaders = append(p.info.CustomHeaders, bus.Header{Name: name, Value: headers[name]})
	}
}

// fastCGIParamsKey is the annotation, relative to the prefix, naming a
// ConfigMap of the Ingress's namespace whose data are FastCGI parameters
// (backend-protocol FCGI); the upstream plugin owns the key.
const fastCGIParamsKey = "fastcgi-params-configmap"

// addFastCGIParams resolves fastcgi-params-configmap into
// p.info.FastCGIParams, rejecting the Ingress as addCustomHeaders does: an
// application without the parameters it was given would misbehave.
func (p *ingressPlan) addFastCGIParams(t *Translator, ing *networkingv1.Ingress) {
	data, annotation, id, ok := p.annotationConfigMap(t, ing, fastCGIParamsKey)
	if !ok {
		return
	}
	var params []bus.Header
	for _, name := range slices.Sorted(maps.Keys(data)) {
		params = append(params, bus.Header{Name: name, Value: data[name]})
	}
	if err := features.ValidFastCGIParams(params); err != nil {
		p.reject(annotationField(annotation), "InvalidAnnotation", "%s: ConfigMap %s: %v", annotation, id, err)
		return
	}
	p.info.FastCGIParams = params
}

// annotationConfigMap reads the ConfigMap an annotation (relative to the
// prefix) names, "name" or "namespace/name" (another namespace only with
// allow-cross-namespace-resources). It rejects the Ingress when the value
// names another namespace it may not read or a ConfigMap that does not
// exist, and records the ConfigMap so a change of
// it translates the Ingress again. ok is false when there is nothing to
// read (no annotation, or rejected).
func (p *ingressPlan) annotationConfigMap(t *Translator, ing *networkingv1.Ingress, key string) (data map[string]string, annotation, id string, ok bool) {
	data, annotation, id, problem, set := p.lookupAnnotationConfigMap(t, ing, key)
	if problem != nil {
		p.info.Rejected = true
		p.info.Problems = append(p.info.Problems, *problem)
		return nil, "", "", false
	}
	return data, annotation, id, set
}

// lookupAnnotationConfigMap is annotationConfigMap leaving the choice to
// the caller: problem says why the ConfigMap cannot be read; set is false
// when the annotation is absent.
func (p *ingressPlan) lookupAnnotationConfigMap(t *Translator, ing *networkingv1.Ingress, key string) (data map[string]string, annotation, id string, problem *bus.Problem, set bool) {
	annotation = t.cfg.annotationsPrefix() + "/" + key
	value, set := ing.Annotations[annotation]
	if !set {
		return nil, "", "", nil, false
	}
	field := annotationField(annotation)
	id, valid := bus.ParseSecretRef(ing.Namespace, strings.TrimSpace(value)) // "name" or "namespace/name"
	if !valid {
		return nil, annotation, "", &bus.Problem{Field: field, Reason: "InvalidAnnotation",
			Message: fmt.Sprintf("%s: %s is not the name of a ConfigMap", annotation, clipQuoted(value))}, true
	}
	if !bus.RefAllowed(ing.Namespace, id, t.crossNamespace()) {
		return nil, annotation, "", &bus.Problem{Field: field, Reason: "InvalidAnnotation",
			Message: bus.CrossNamespaceRefused(annotation, "ConfigMap", id, ing.Namespace)}, true
	}
	p.configMaps = append(p.configMaps, id)
	cm, found := t.objs.configMaps[id]
	if !found {
		return nil, annotation, id, &bus.Problem{Field: field, Reason: "ConfigMapNotFound",
			Message: fmt.Sprintf("%s: ConfigMap %s is not found; the Ingress is not served until it exists", annotation, id)}, true
	}
	return cm.Data, annotation, id, nil, true
}

// annotationField is the Problem field of an annotation (with its prefix).
func annotationField(annotation string) string { return "metadata.annotations[" + annotation + "]" }

// reject marks the Ingress rejected with a Problem.
func (p *ingressPlan) reject(field, reason, format string, args ...any) {
	p.info.Rejected = true
	p.info.Problems = append(p.info.Problems, bus.Problem{Field: field, Reason: reason, Message: fmt.Sprintf(format, args...)})
}

// authProxySetHeadersKey is the annotation, relative to the prefix,
// naming a ConfigMap of the Ingress's namespace whose data are headers set
// on the request to the auth service; the auth plugin owns the key.
const authProxySetHeadersKey = "auth-proxy-set-headers"

// addAuthProxySetHeaders resolves auth-proxy-set-headers into
// p.info.AuthProxySetHeaders. A ConfigMap that cannot be used does not
// reject the Ingress: its locations with external auth answer 503 (the
// annotations stage denies them), as ingress-nginx denies them, so the
// paths stay closed rather than fall to whatever else matches them.
func (p *ingressPlan) addAuthProxySetHeaders(t *Translator, ing *networkingv1.Ingress) {
	data, annotation, id, problem, set := p.lookupAnnotationConfigMap(t, ing, authProxySetHeadersKey)
	if !set {
		return
	}
	if problem == nil {
		if err := checkAuthProxyHeaders(data); err != nil {
			problem = &bus.Problem{Field: annotationField(annotation), Reason: "InvalidAnnotation",
				Message: fmt.Sprintf("%s: ConfigMap %s: %v", annotation, id, err)}
		}
	}
	if problem != nil {
		if problem.Reason == "ConfigMapNotFound" {
			problem.Message = fmt.Sprintf("%s: ConfigMap %s is not found", annotation, id)
		}
		problem.Message += "; its paths with external auth answer 503 until it is fixed"
		p.info.Problems = append(p.info.Problems, *problem)
		p.info.AuthProxySetHeadersUnusable = annotation + " unusable"
		return
	}
	for _, name := range slices.Sorted(maps.Keys(data)) {
		p.info.AuthProxySetHeaders = append(p.info.AuthProxySetHeaders, bus.Header{Name: name, Value: data[name]})
	}
}

// checkAuthProxyHeaders checks the headers for the auth request as every
// header NGINX gets; errors name the header, never the value.
func checkAuthProxyHeaders(data map[string]string) error {
	headers := make([]bus.Header, 0, len(data))
	for _, name := range slices.Sorted(maps.Keys(data)) {
		headers = append(headers, bus.Header{Name: name, Value: data[name]})
	}
	return features.ValidAuthProxyHeaders(headers)
}
