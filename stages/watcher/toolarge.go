package watcher

import (
	"encoding/json"
	"maps"
	"strconv"

	"go.uber.org/zap"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// legacyClassAnnotation decides, like spec.ingressClassName, whether an
// Ingress is ours: a stand-in keeps it.
const legacyClassAnnotation = "kubernetes.io/ingress.class"

// standIns replaces each Ingress over the bus limit by a small stand-in
// (see bus.AnnotationTooLarge). etcd takes objects up to 1.5 MiB, the bus
// 1 MiB: without this, the object would be left out silently. Any other
// object over the limit stays as is: the writer leaves it out, keeps its
// last value, and logs it. objects is never changed; a copy is returned
// when something was replaced. reported remembers what was logged.
func standIns(objects map[string][]byte, reported map[string]int, log *zap.Logger) map[string][]byte {
	var out map[string][]byte
	seen := map[string]bool{}
	for key, data := range objects {
		if len(data) <= bus.MaxValue {
			continue
		}
		kind, _, err := bus.SplitKey(key)
		if err != nil || kind != bus.KindObject {
			continue
		}
		stand, ok := ingressStandIn(key, data)
		if !ok {
			continue
		}
		if out == nil {
			out = maps.Clone(objects)
		}
		out[key] = stand
		seen[key] = true
		if reported[key] != len(data) {
			reported[key] = len(data)
			log.Warn("Ingress over the bus limit; it is rejected and reported", zap.String("key", key),
				zap.Int("bytes", len(data)), zap.Int("limit", bus.MaxValue))
		}
	}
	for key := range reported {
		if !seen[key] {
			delete(reported, key)
		}
	}
	if out == nil {
		return objects
	}
	return out
}

// ingressStandIn is the stand-in for an Ingress's JSON, false when the
// key is not an Ingress's or the JSON does not decode.
func ingressStandIn(key string, data []byte) ([]byte, bool) {
	_, parts, _ := bus.SplitKey(key)
	if len(parts) != 3 || parts[0] != bus.ObjectIngress {
		return nil, false
	}
	var ing networkingv1.Ingress
	if json.Unmarshal(data, &ing) != nil {
		return nil, false
	}
	annotations := map[string]string{bus.AnnotationTooLarge: strconv.Itoa(len(data))}
	if class, ok := ing.Annotations[legacyClassAnnotation]; ok {
		annotations[legacyClassAnnotation] = class
	}
	stand := networkingv1.Ingress{
		TypeMeta: ing.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Namespace: ing.Namespace, Name: ing.Name, UID: ing.UID, Generation: ing.Generation,
			CreationTimestamp: ing.CreationTimestamp, Annotations: annotations,
		},
		Spec: networkingv1.IngressSpec{IngressClassName: ing.Spec.IngressClassName},
	}
	out, err := json.Marshal(&stand)
	return out, err == nil
}
