package translator

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// objectCache keeps decoded objects by key, so a generation that changes one
// object decodes one object.
type objectCache struct {
	objects map[string]any
}

func newObjectCache() *objectCache { return &objectCache{objects: map[string]any{}} }

// update decodes the changed keys (all of them when changed is nil) and
// returns problems with individual objects; a bad object is left out.
func (c *objectCache) update(entries map[string][]byte, changed map[string]bool) []error {
	var errs []error
	if changed == nil {
		c.objects = map[string]any{}
		changed = map[string]bool{}
		for k := range entries {
			changed[k] = true
		}
	}
	for key := range changed {
		data, ok := entries[key]
		if !ok {
			delete(c.objects, key)
			continue
		}
		obj, err := decodeEntry(key, data)
		if err != nil {
			delete(c.objects, key)
			errs = append(errs, err)
			continue
		}
		c.objects[key] = obj
	}
	return errs
}

func decodeEntry(key string, data []byte) (any, error) {
	kind, parts, err := bus.SplitKey(key)
	if err != nil {
		return nil, err
	}
	if kind != bus.KindObject || len(parts) != 3 {
		return nil, fmt.Errorf("key %q: want object.<kind>.<namespace>.<name>", key)
	}
	return bus.DecodeObject(parts[0], data)
}

func (c *objectCache) snapshot() Snapshot {
	var s Snapshot
	for _, obj := range c.objects {
		s.add(obj)
	}
	return s
}

func (s *Snapshot) add(obj any) {
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		s.Ingresses = append(s.Ingresses, o)
	case *networkingv1.IngressClass:
		s.IngressClasses = append(s.IngressClasses, o)
	case *corev1.Service:
		s.Services = append(s.Services, o)
	case *discoveryv1.EndpointSlice:
		s.EndpointSlices = append(s.EndpointSlices, o)
	case *corev1.Secret:
		s.Secrets = append(s.Secrets, o)
	case *corev1.ConfigMap:
		s.ConfigMaps = append(s.ConfigMaps, o)
	}
}
