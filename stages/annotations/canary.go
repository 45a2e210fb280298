package annotations

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"switchyard.dev/switchyard/bus"
)

// Canaries reach the Lua balancer as ingress-nginx sends them: the primary
// backend lists the canary's backend in alternativeBackends, and the
// canary backend carries the canary Ingress's policy as
// trafficShapingPolicy. Both are backend fields, so a weight or header
// change is a backend push to Lua and never a reload.
//
// Scope, as in ingress-nginx: alternatives belong to the backend (one
// Service port), not to the location, so every location proxying to a
// primary backend that has a canary somewhere shares that canary. When one
// backend is the primary of several canaries, Lua uses the first
// alternative (sorted by name), like ingress-nginx's alternativeBackends[1].

// canaryPlugin is the built-in plugin whose annotations a canary Ingress
// keeps; ingress-nginx ignores every other annotation of a canary.
const canaryPlugin = "canary"

// canaryLink is one location's canary: its primary backend, the canary's
// backend and the canary Ingress whose policy applies.
type canaryLink struct {
	primary, canary, ingress string
}

// canaryIndex keeps the translated backends and which canaries link them,
// so a change re-emits only the backends it touches.
type canaryIndex struct {
	raw       map[string][]byte             // backend name → JSON as translated
	byServer  map[string][]canaryLink       // server key → its locations' links
	byBackend map[string]map[canaryLink]int // backend name (primary or canary) → links
	byIngress map[string]map[canaryLink]int // canary Ingress → links
	affected  map[string]bool               // backends to emit after this update
}

func newCanaryIndex() *canaryIndex {
	return &canaryIndex{raw: map[string][]byte{}, byServer: map[string][]canaryLink{},
		byBackend: map[string]map[canaryLink]int{}, byIngress: map[string]map[canaryLink]int{}, affected: map[string]bool{}}
}

// isCanary says whether an Ingress is a canary, as the translator does.
func (a *Annotator) isCanary(info *bus.IngressInfo) bool {
	v, _ := strconv.ParseBool(info.Annotations[a.prefix+"/canary"])
	return v
}

// setServer replaces one server's links (s nil: the server is gone).
func (c *canaryIndex) setServer(key string, s *bus.Server) {
	for _, l := range c.byServer[key] {
		c.count(l, -1)
	}
	delete(c.byServer, key)
	if s == nil {
		return
	}
	var links []canaryLink
	for _, loc := range s.Locations {
		if loc.Canary != nil && loc.Backend != "" {
			links = append(links, canaryLink{primary: loc.Backend, canary: loc.Canary.Backend, ingress: loc.Canary.Ingress})
		}
	}
	if len(links) > 0 {
		c.byServer[key] = links
	}
	for _, l := range links {
		c.count(l, 1)
	}
}

func (c *canaryIndex) count(l canaryLink, delta int) {
	c.affected[l.primary], c.affected[l.canary] = true, true
	for _, idx := range []struct {
		m map[string]map[canaryLink]int
		k string
	}{{c.byBackend, l.primary}, {c.byBackend, l.canary}, {c.byIngress, l.ingress}} {
		if idx.m[idx.k] == nil {
			idx.m[idx.k] = map[canaryLink]int{}
		}
		idx.m[idx.k][l] += delta
		if idx.m[idx.k][l] <= 0 {
			delete(idx.m[idx.k], l)
		}
		if len(idx.m[idx.k]) == 0 {
			delete(idx.m, idx.k)
		}
	}
}

// setBackend records a translated backend (data nil: deleted).
func (c *canaryIndex) setBackend(name string, data []byte) {
	if data == nil {
		delete(c.raw, name)
	} else {
		c.raw[name] = data
	}
	c.affected[name] = true
}

// ingressChanged marks the backends of a canary Ingress whose result may
// have changed.
func (c *canaryIndex) ingressChanged(id string) {
	for l := range c.byIngress[id] {
		c.affected[l.primary], c.affected[l.canary] = true, true
	}
}

// policy is the canary policy of a canary Ingress, nil when the plugins
// rejected it or gave it none: then its primary is served alone.
func (a *Annotator) policy(id string) *bus.Canary {
	res := a.results[id]
	if res == nil || res.rejected || res.features == nil || res.features.Deny != nil {
		return nil
	}
	return res.features.Canary
}

// emitBackends writes every affected backend with its canary fields.
func (a *Annotator) emitBackends(dirty map[string]bool, out *bus.Output) error {
	c := a.canary
	for id := range dirty {
		c.ingressChanged(id)
	}
	for name := range c.affected {
		key := bus.Key(bus.KindBackend, name)
		data, ok := c.raw[name]
		switch {
		case !ok:
			out.Deletes = append(out.Deletes, key)
		case len(c.byBackend[name]) == 0:
			out.Puts[key] = data // no canary involved: pass through untouched
		default:
			annotated, err := a.annotatedBackend(name, data)
			if err != nil {
				return err
			}
			out.Puts[key] = annotated
		}
	}
	clear(c.affected)
	return nil
}

// annotatedBackend adds alternativeBackends (as a primary) and
// trafficShapingPolicy (as a canary) to one backend.
func (a *Annotator) annotatedBackend(name string, data []byte) ([]byte, error) {
	c := a.canary
	b := new(bus.Backend)
	if err := json.Unmarshal(data, b); err != nil {
		return nil, fmt.Errorf("decode backend %s: %w", name, err)
	}
	links := slices.SortedFunc(maps.Keys(c.byBackend[name]), func(x, y canaryLink) int {
		if x.ingress != y.ingress {
			return cmpString(x.ingress, y.ingress)
		}
		return cmpString(x.canary+x.primary, y.canary+y.primary)
	})
	alts := map[string]bool{}
	for _, l := range links {
		p := a.policy(l.ingress)
		if p == nil {
			continue
		}
		if l.primary == name && c.raw[l.canary] != nil {
			alts[l.canary] = true
		}
		if l.canary == name && b.TrafficShapingPolicy == nil {
			// The oldest-named canary Ingress wins when two use one backend.
			b.TrafficShapingPolicy = p
		}
	}
	b.AlternativeBackends = slices.Sorted(maps.Keys(alts))
	encoded, err := json.Marshal(b)
	if err != nil {
		return nil, fmt.Errorf("encode backend %s: %w", name, err)
	}
	return encoded, nil
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
