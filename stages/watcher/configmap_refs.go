package watcher

import (
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// headerConfigMapKeys are the controller ConfigMap keys whose value names
// another ConfigMap ("namespace/name") of headers, as in ingress-nginx.
var headerConfigMapKeys = []string{"add-headers", "proxy-set-headers"}

// controllerConfigMapRefs returns the ConfigMaps the controller ConfigMap
// (its canonical JSON) names, "namespace/name"; the translator checks the
// values, this only has to find them.
func controllerConfigMapRefs(data []byte) []string {
	var cm corev1.ConfigMap
	if json.Unmarshal(data, &cm) != nil {
		return nil
	}
	var refs []string
	for _, key := range headerConfigMapKeys {
		ref := strings.TrimSpace(cm.Data[key])
		if ns, name, ok := strings.Cut(ref, "/"); ok && ns != "" && name != "" && !strings.Contains(name, "/") {
			refs = append(refs, ref)
		}
	}
	return refs
}
