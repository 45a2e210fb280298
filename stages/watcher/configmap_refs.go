package watcher

import (
	"encoding/json"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// headerConfigMapKeys are the controller ConfigMap keys whose value names
// another ConfigMap ("namespace/name") of headers, as in ingress-nginx.
var headerConfigMapKeys = []string{"add-headers", "proxy-set-headers"}

// secretKeys are the controller ConfigMap keys whose value names a Secret
// ("namespace/name").
var secretKeys = []string{"ssl-dh-param"}

// controllerConfig is what the watcher reads of the controller ConfigMap.
type controllerConfig struct {
	// configMaps and secrets are the ConfigMaps and the Secrets it names,
	// "namespace/name"; the translator checks the values, this only has
	// to find them.
	configMaps, secrets []string
	// crossNamespace is allow-cross-namespace-resources: annotations may
	// name Secrets and ConfigMaps of other namespaces, which are then
	// forwarded too.
	crossNamespace bool
}

// readControllerConfig decodes the controller ConfigMap (its canonical
// JSON) once; an undecodable one reads as defaults.
func readControllerConfig(data []byte) controllerConfig {
	var cm corev1.ConfigMap
	if json.Unmarshal(data, &cm) != nil {
		return controllerConfig{}
	}
	// The translator reads the key with strconv.ParseBool too; an invalid
	// value is its default, false.
	cross, _ := strconv.ParseBool(strings.TrimSpace(cm.Data["allow-cross-namespace-resources"]))
	return controllerConfig{configMaps: refsIn(cm.Data, headerConfigMapKeys), secrets: refsIn(cm.Data, secretKeys), crossNamespace: cross}
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
