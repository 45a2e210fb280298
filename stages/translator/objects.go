package translator

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// objects holds the current Kubernetes objects by namespace/name (classes
// by name), and EndpointSlices grouped by the Service they belong to.
type objects struct {
	ingresses map[string]*networkingv1.Ingress
	classes   map[string]*networkingv1.IngressClass
	services  map[string]*corev1.Service
	// slices are a Service's EndpointSlices: a list, not a map by name,
	// since most Services have one (a map each was megabytes at 10,000).
	slices     map[string][]*discoveryv1.EndpointSlice // service → its slices
	sliceOwner map[string]string                       // slice → service, to move a relabelled slice
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func newObjects() objects {
	return objects{
		ingresses: map[string]*networkingv1.Ingress{}, classes: map[string]*networkingv1.IngressClass{},
		services: map[string]*corev1.Service{}, slices: map[string][]*discoveryv1.EndpointSlice{},
		sliceOwner: map[string]string{}, secrets: map[string]*corev1.Secret{}, configMaps: map[string]*corev1.ConfigMap{},
	}
}

func setOrDelete[T any](m map[string]*T, key string, v *T, deleted bool) {
	if deleted {
		delete(m, key)
	} else {
		m[key] = v
	}
}

func (o *objects) setIngress(v *networkingv1.Ingress, deleted bool) {
	setOrDelete(o.ingresses, objectName(v.Namespace, v.Name), v, deleted)
}

func (o *objects) setClass(v *networkingv1.IngressClass, deleted bool) {
	setOrDelete(o.classes, v.Name, v, deleted)
}

func (o *objects) setService(v *corev1.Service, deleted bool) {
	setOrDelete(o.services, objectName(v.Namespace, v.Name), v, deleted)
}

func (o *objects) setSecret(v *corev1.Secret, deleted bool) {
	setOrDelete(o.secrets, objectName(v.Namespace, v.Name), v, deleted)
}

func (o *objects) setConfigMap(v *corev1.ConfigMap, deleted bool) {
	setOrDelete(o.configMaps, objectName(v.Namespace, v.Name), v, deleted)
}

// setSlice stores a slice under its Service and returns the Services whose
// endpoints may have changed: the old owner too, if the label moved.
func (o *objects) setSlice(v *discoveryv1.EndpointSlice, deleted bool) []string {
	key := objectName(v.Namespace, v.Name)
	var touched []string
	if old, ok := o.sliceOwner[key]; ok {
		rest := slices.DeleteFunc(o.slices[old], func(es *discoveryv1.EndpointSlice) bool {
			return es.Namespace == v.Namespace && es.Name == v.Name
		})
		if len(rest) == 0 {
			delete(o.slices, old)
		} else {
			o.slices[old] = rest
		}
		delete(o.sliceOwner, key)
		touched = append(touched, old)
	}
	svc := v.Labels[serviceNameLabel]
	if deleted || svc == "" {
		return touched
	}
	owner := objectName(v.Namespace, svc)
	o.slices[owner] = append(o.slices[owner], v)
	o.sliceOwner[key] = owner
	return append(touched, owner)
}

func (o *objects) readyEndpoints(svc string, sp corev1.ServicePort) []bus.Endpoint {
	return endpointsOf(o.slices[svc], sp)
}

func (o *objects) haveDefaultClass(controller string) bool {
	for _, c := range o.classes {
		if c.Spec.Controller == controller && c.Annotations[defaultClassAnnotation] == "true" {
			return true
		}
	}
	return false
}

func stringsCut(nsName string) (string, string, bool) { return strings.Cut(nsName, "/") }
