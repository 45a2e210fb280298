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
// under prefix. Only Secrets of the Ingress's own namespace are returned:
// an Ingress must not read another namespace's Secrets (the plugin reports
// such a value).
func AnnotationSecretRefs(namespace string, annotations map[string]string, prefix string) []string {
	var refs []string
	for _, key := range SecretAnnotations {
		value, ok := annotations[prefix+"/"+key]
		if !ok {
			continue
		}
		if id, ok := ParseSecretRef(namespace, value); ok && strings.HasPrefix(id, namespace+"/") && !slices.Contains(refs, id) {
			refs = append(refs, id)
		}
	}
	slices.Sort(refs)
	return refs
}
