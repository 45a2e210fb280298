package annotations

import (
	"maps"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// Canaries reach the Lua balancer as ingress-nginx sends them: the primary
// backend lists the canary's backend in alternativeBackends, and the
// canary backend carries the canary Ingress's policy as
// trafficShapingPolicy. Both are backend fields, so a weight or header
// change is a backend push to Lua and never a reload.
//
// Scope: unlike ingress-nginx, a canary belongs to the host and path it was
// declared for. The canary backend also carries every canary Ingress's
// policy by Ingress (CanaryPolicies), and each location names its own
// canary backend and Ingress to Lua, so two canaries sharing a Service, or
// primaries sharing one, never take each other's policy, and a location
// without a canary never goes to one. alternativeBackends and
// trafficShapingPolicy stay for ingress-nginx's shape (and for a rewrite
// hook called without a backend name).

// canaryPlugin is the built-in plugin whose annotations a canary Ingress
// keeps; ingress-nginx ignores every other annotation of a canary.
const canaryPlugin = "canary"

// canaryLink is one location's canary: its primary backend, the canary's
// backend and the canary Ingress whose policy applies.
type canaryLink struct {
	primary, canary, ingress string
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

// applyCanary adds alternativeBackends (as a primary) and
// trafficShapingPolicy (as a canary) to backend b.
func (a *Annotator) applyCanary(name string, b *bus.Backend) {
	o := a.backends
	links := slices.SortedFunc(o.byBackend[name].Values(), func(x, y canaryLink) int {
		if x.ingress != y.ingress {
			return bus.CompareIngressAge(a.created(x.ingress), x.ingress, a.created(y.ingress), y.ingress)
		}
		return strings.Compare(x.canary+x.primary, y.canary+y.primary)
	})
	alts := map[string]bool{}
	for _, l := range links {
		p := a.policy(l.ingress)
		if p == nil {
			continue
		}
		if l.primary == name && o.raw[l.canary] != nil {
			alts[l.canary] = true
		}
		if l.canary == name && b.TrafficShapingPolicy == nil {
			// The oldest canary Ingress wins when two use one backend,
			// as in ingress-nginx.
			b.TrafficShapingPolicy = p
		}
		if l.canary == name {
			if b.CanaryPolicies == nil {
				b.CanaryPolicies = map[string]*bus.Canary{}
			}
			b.CanaryPolicies[l.ingress] = p
		}
	}
	b.AlternativeBackends = slices.Sorted(maps.Keys(alts))
}
