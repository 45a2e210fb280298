package metrics

import (
	"sync"

	"switchyard.dev/switchyard/bus"
)

// IngressSet is the Ingresses the pipeline knows, from the annotations
// stage's table: the per-request series of an Ingress that is gone are
// no longer exported, as ingress-nginx removes them (NGINX's dict keeps
// their counts, which go on if the Ingress comes back).
type IngressSet struct {
	mu    sync.RWMutex
	known bool
	names map[[2]string]bool
}

// NewIngressSet is empty until its first Update; until then it has every
// Ingress.
func NewIngressSet() *IngressSet { return &IngressSet{names: map[[2]string]bool{}} }

// Update applies one snapshot of the annotations stage's table.
func (s *IngressSet) Update(snap bus.Snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if snap.Full {
		clear(s.names)
	}
	s.known = true
	for _, key := range snap.Deletes {
		if id, ok := ingressID(key); ok {
			delete(s.names, id)
		}
	}
	for key := range snap.Puts {
		if id, ok := ingressID(key); ok {
			s.names[id] = true
		}
	}
}

// Has says whether the Ingress namespace/name exists, or the set has
// not heard from the pipeline yet.
func (s *IngressSet) Has(namespace, name string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return !s.known || s.names[[2]string{namespace, name}]
}

func ingressID(key string) ([2]string, bool) {
	kind, parts, err := bus.SplitKey(key)
	if err != nil || kind != bus.KindIngress || len(parts) != 2 {
		return [2]string{}, false
	}
	return [2]string{parts[0], parts[1]}, true
}
