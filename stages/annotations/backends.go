package annotations

import (
	"encoding/json"
	"fmt"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/compact"
)

// The backend overlay: backends pass through this stage, and the
// annotations that belong to a backend rather than to a location are
// written onto it here: the canary fields (canary.go) and the balancing
// settings (balancing.go). Both are read by the Lua balancer, so changing
// them is a backend push, never an NGINX reload. The overlay indexes which
// servers, locations and Ingresses touch each backend, so a change
// re-emits only the backends it affects.

// backendUse is one location's (or canary's) use of a backend by an
// Ingress.
type backendUse struct {
	backend, ingress string
}

// serverRefs is what one server's locations say about backends.
type serverRefs struct {
	links []canaryLink
	uses  []backendUse
}

// backendOverlay keeps the translated backends and the indexes above.
type backendOverlay struct {
	raw       map[string][]byte                     // backend name → JSON as translated
	byServer  map[string]serverRefs                 // server key → its locations' links and uses
	byBackend map[string]compact.Counts[canaryLink] // backend name (primary or canary) → canary links
	byIngress map[string]compact.Counts[canaryLink] // canary Ingress → links
	users     map[string]compact.Counts[string]     // backend name → Ingresses using it → locations
	usedBy    map[string]compact.Counts[string]     // Ingress → backends it uses → locations
	// conflicts records, per backend, the Ingresses whose balancing lost
	// to another Ingress's (loser → winner), for their warnings.
	conflicts map[string]map[string]string
	affected  map[string]bool // backends to emit after this update
}

func newBackendOverlay() *backendOverlay {
	return &backendOverlay{raw: map[string][]byte{}, byServer: map[string]serverRefs{},
		byBackend: map[string]compact.Counts[canaryLink]{}, byIngress: map[string]compact.Counts[canaryLink]{},
		users: map[string]compact.Counts[string]{}, usedBy: map[string]compact.Counts[string]{},
		conflicts: map[string]map[string]string{}, affected: map[string]bool{}}
}

// setServer replaces one server's references (s nil: the server is gone).
func (o *backendOverlay) setServer(key string, s *bus.Server) {
	old := o.byServer[key]
	for _, l := range old.links {
		o.countLink(l, -1)
	}
	for _, u := range old.uses {
		o.countUse(u, -1)
	}
	delete(o.byServer, key)
	if s == nil {
		return
	}
	var refs serverRefs
	for _, loc := range s.Locations {
		if loc.Backend != "" && loc.Ingress != "" {
			refs.uses = append(refs.uses, backendUse{backend: loc.Backend, ingress: loc.Ingress})
		}
		if loc.Canary != nil && loc.Backend != "" {
			l := canaryLink{primary: loc.Backend, canary: loc.Canary.Backend, ingress: loc.Canary.Ingress}
			refs.links = append(refs.links, l)
			// The canary Ingress's own balancing applies to its backend.
			refs.uses = append(refs.uses, backendUse{backend: l.canary, ingress: l.ingress})
		}
	}
	if len(refs.links)+len(refs.uses) > 0 {
		o.byServer[key] = refs
	}
	for _, l := range refs.links {
		o.countLink(l, 1)
	}
	for _, u := range refs.uses {
		o.countUse(u, 1)
	}
}

func (o *backendOverlay) countLink(l canaryLink, delta int) {
	o.affected[l.primary], o.affected[l.canary] = true, true
	compact.Count(o.byBackend, l.primary, l, delta)
	compact.Count(o.byBackend, l.canary, l, delta)
	compact.Count(o.byIngress, l.ingress, l, delta)
}

func (o *backendOverlay) countUse(u backendUse, delta int) {
	o.affected[u.backend] = true
	compact.Count(o.users, u.backend, u.ingress, delta)
	compact.Count(o.usedBy, u.ingress, u.backend, delta)
}

// setBackend records a translated backend (data nil: deleted).
func (o *backendOverlay) setBackend(name string, data []byte) {
	if data == nil {
		delete(o.raw, name)
	} else {
		o.raw[name] = data
	}
	o.affected[name] = true
}

// ingressChanged marks the backends whose result may depend on Ingress id.
func (o *backendOverlay) ingressChanged(id string) {
	for l := range o.byIngress[id].Values() {
		o.affected[l.primary], o.affected[l.canary] = true, true
	}
	for name := range o.usedBy[id].Values() {
		o.affected[name] = true
	}
}

// touchAll marks every backend, for a change of a global setting.
func (o *backendOverlay) touchAll() {
	for name := range o.raw {
		o.affected[name] = true
	}
}

// emitBackends writes every affected backend with its overlay. Ingresses
// whose balancing warnings change are added to dirty, so their infos (and
// Events) are written again.
func (a *Annotator) emitBackends(dirty map[string]bool, out *bus.Output) error {
	o := a.backends
	for id := range dirty {
		o.ingressChanged(id)
	}
	var changedInfos []string
	for name := range o.affected {
		key := bus.Key(bus.KindBackend, name)
		data, ok := o.raw[name]
		if !ok {
			changedInfos = append(changedInfos, o.setConflicts(name, nil)...)
			out.Deletes = append(out.Deletes, key)
			continue
		}
		balancing, conflicts := a.balancingOf(name)
		changedInfos = append(changedInfos, o.setConflicts(name, conflicts)...)
		if o.byBackend[name].Len() == 0 && balancing == nil && a.settings.LoadBalance == bus.LoadBalanceRoundRobin {
			out.Puts[key] = data // nothing to add: pass through untouched
			continue
		}
		b := new(bus.Backend)
		if err := json.Unmarshal(data, b); err != nil {
			return fmt.Errorf("decode backend %s: %w", name, err)
		}
		a.applyCanary(name, b)
		applyBalancing(balancing, b, a.settings.LoadBalance)
		annotated, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("encode backend %s: %w", name, err)
		}
		out.Puts[key] = annotated
	}
	clear(o.affected)
	for _, id := range changedInfos {
		if a.ingresses[id] != nil {
			dirty[id] = true
		}
	}
	return nil
}

// setConflicts replaces the conflicts of one backend and returns the
// Ingresses whose warnings changed.
func (o *backendOverlay) setConflicts(name string, next map[string]string) []string {
	prev := o.conflicts[name]
	var changed []string
	for id, winner := range prev {
		if next[id] != winner {
			changed = append(changed, id)
		}
	}
	for id := range next {
		if _, ok := prev[id]; !ok {
			changed = append(changed, id)
		}
	}
	if len(next) == 0 {
		delete(o.conflicts, name)
	} else {
		o.conflicts[name] = next
	}
	return changed
}
