package bus

import (
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus/features"
)

// KindSecret is a Secret an annotation names (auth-secret), published by
// the translator for the annotations stage only: it never reaches the
// renderer, and Secrets referenced only by spec.tls never get this kind.
//
//	translator.secret.<namespace>.<name>   Secret
const KindSecret = "secret"

// Secret is the data of a Secret an annotation names. It is secret: never
// log it, never put it in an error.
type Secret struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Data      map[string][]byte `json:"data,omitempty"`
}

// SecretAnnotations are the annotation keys, relative to the annotation
// prefix, whose value names a Secret ("name" or "namespace/name"). The
// watcher forwards those Secrets and the translator publishes them; the
// plugin that owns the key declares it SecretRef.
var SecretAnnotations = []string{"auth-secret", "proxy-ssl-secret", "auth-tls-secret"}

// ConfigMapAnnotations are the annotation keys, relative to the prefix,
// whose value names a ConfigMap of the Ingress's namespace: the watcher
// forwards those ConfigMaps and the translator reads them.
var ConfigMapAnnotations = []string{"custom-headers", "fastcgi-params-configmap", "auth-proxy-set-headers"}

// ParseSecretRef reads an annotation value naming a Secret, relative to the
// Ingress's namespace, and returns "namespace/name"; see
// features.ParseSecretRef.
func ParseSecretRef(namespace, value string) (id string, ok bool) {
	return features.ParseSecretRef(namespace, value)
}

// AnnotationSecretRefs returns the Secrets ("namespace/name", sorted) the
// annotations of an Ingress in namespace name through SecretAnnotations
// under prefix. A Secret of another namespace is returned only when
// crossNamespace (the ConfigMap's allow-cross-namespace-resources) is on:
// otherwise an Ingress must not read it (the annotations stage reports
// such a value).
func AnnotationSecretRefs(namespace string, annotations map[string]string, prefix string, crossNamespace bool) []string {
	refs := annotationRefs(SecretAnnotations, namespace, annotations, prefix, crossNamespace)
	slices.Sort(refs)
	return refs
}

// AnnotationConfigMapRefs returns the ConfigMaps ("namespace/name", in
// the order of ConfigMapAnnotations) an Ingress's annotations name, under
// the same rule as AnnotationSecretRefs (the translator reports any other
// value).
func AnnotationConfigMapRefs(namespace string, annotations map[string]string, prefix string, crossNamespace bool) []string {
	return annotationRefs(ConfigMapAnnotations, namespace, annotations, prefix, crossNamespace)
}

// annotationRefs are the distinct objects the annotations keys (relative
// to prefix) of an Ingress in namespace name and may read.
func annotationRefs(keys []string, namespace string, annotations map[string]string, prefix string, crossNamespace bool) []string {
	var refs []string
	for _, key := range keys {
		value, ok := annotations[prefix+"/"+key]
		if !ok {
			continue
		}
		if id, ok := ParseSecretRef(namespace, strings.TrimSpace(value)); ok && RefAllowed(namespace, id, crossNamespace) && !slices.Contains(refs, id) {
			refs = append(refs, id)
		}
	}
	return refs
}

// RefAllowed says whether an Ingress of namespace may read the Secret or
// ConfigMap id ("namespace/name") an annotation names: one of its own
// namespace always, another one only when crossNamespace (the controller
// ConfigMap's allow-cross-namespace-resources, as in ingress-nginx) is on.
func RefAllowed(namespace, id string, crossNamespace bool) bool {
	return crossNamespace || strings.HasPrefix(id, namespace+"/")
}

// CrossNamespaceRefused is the message for an annotation naming a Secret
// or ConfigMap (kind) of another namespace while the controller ConfigMap
// does not allow it.
func CrossNamespaceRefused(annotation, kind, id, namespace string) string {
	return annotation + ": " + kind + " " + id + " is not of the Ingress's namespace " + namespace +
		"; resources of other namespaces are read only when the controller ConfigMap sets allow-cross-namespace-resources: \"true\""
}
