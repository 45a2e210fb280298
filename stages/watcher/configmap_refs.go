package watcher

import (
	"encoding/json"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"switchyard.dev/switchyard/bus"
)

// headerConfigMapKeys are the controller ConfigMap keys whose value names
// another ConfigMap ("namespace/name") of headers, as in ingress-nginx.
var headerConfigMapKeys = []string{"add-headers", "proxy-set-headers"}

// secretKeys are the controller ConfigMap keys whose value names a Secret
// ("namespace/name").
var secretKeys = []string{"ssl-dh-param"}

// controllerRefs returns the ConfigMaps and the Secrets the controller
// ConfigMap (its canonical JSON) names, "namespace/name"; the translator
// checks the values, this only has to find them.
func controllerRefs(data []byte) (configMaps, secrets []string) {
	var cm corev1.ConfigMap
	if json.Unmarshal(data, &cm) != nil {
		return nil, nil
	}
	return refsIn(cm.Data, headerConfigMapKeys), refsIn(cm.Data, secretKeys)
}

// refsIn are the values of keys that have the shape "namespace/name".
func refsIn(data map[string]string, keys []string) []string {
	var refs []string
	for _, key := range keys {
		ref := strings.TrimSpace(data[key])
		if ns, name, ok := strings.Cut(ref, "/"); ok && ns != "" && name != "" && !strings.Contains(name, "/") {
			refs = append(refs, ref)
		}
	}
	return refs
}

// annotationConfigMapRefs returns the ConfigMaps an Ingress's annotations
// name (bus.ConfigMapAnnotations), "namespace/name", when they are of the
// Ingress's own namespace (the translator reports any other value).
func annotationConfigMapRefs(namespace string, annotations map[string]string, prefix string) []string {
	var refs []string
	for _, key := range bus.ConfigMapAnnotations {
		value, ok := annotations[prefix+"/"+key]
		if !ok {
			continue
		}
		if id, ok := bus.ParseSecretRef(namespace, strings.TrimSpace(value)); ok && strings.HasPrefix(id, namespace+"/") && !slices.Contains(refs, id) {
			refs = append(refs, id)
		}
	}
	return refs
}
