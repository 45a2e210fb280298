package bus

import (
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

// Object kinds the watcher publishes, as the lowercase token in
// watcher.object.<kind>.<namespace>.<name>. Every source (manifests
// directory, Kubernetes API) publishes exactly these, as the JSON of the
// typed k8s.io/api struct, so later stages never know where objects came from.
const (
	ObjectIngress       = "ingress"
	ObjectIngressClass  = "ingressclass"
	ObjectService       = "service"
	ObjectEndpointSlice = "endpointslice"
	ObjectSecret        = "secret"
	ObjectConfigMap     = "configmap"
)

// ObjectKey is the table key of a Kubernetes object. Cluster-scoped objects
// pass an empty namespace.
func ObjectKey(kind, namespace, name string) string {
	if namespace == "" {
		namespace = ClusterScope
	}
	return Key(KindObject, kind, namespace, name)
}

// DecodeObject decodes a published object by its kind token.
func DecodeObject(kind string, data []byte) (any, error) {
	var obj any
	switch kind {
	case ObjectIngress:
		obj = &networkingv1.Ingress{}
	case ObjectIngressClass:
		obj = &networkingv1.IngressClass{}
	case ObjectService:
		obj = &corev1.Service{}
	case ObjectEndpointSlice:
		obj = &discoveryv1.EndpointSlice{}
	case ObjectSecret:
		obj = &corev1.Secret{}
	case ObjectConfigMap:
		obj = &corev1.ConfigMap{}
	default:
		return nil, fmt.Errorf("unknown object kind %q", kind)
	}
	if err := json.Unmarshal(data, obj); err != nil {
		// json errors quote no input, so Secret data cannot leak here.
		return nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return obj, nil
}

// AnnotationTooLarge marks the stand-in the watcher publishes for an
// Ingress whose JSON is over the bus limit: its name, class and age, and
// this annotation with the Ingress's size in bytes. The translator rejects
// it with a Problem naming the limit, so it is reported, not lost.
const AnnotationTooLarge = "switchyard.dev/too-large"
