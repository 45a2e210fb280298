package annotations

import (
	"encoding/json"
	"fmt"
	"slices"

	"switchyard.dev/switchyard/bus"
)

// Balancing (plugin balancing) belongs to the backend, one Service port,
// which every location and Ingress proxying to it shares, as in
// ingress-nginx. When Ingresses sharing a backend ask for different
// balancing, the oldest wins, as in ingress-nginx, where the first Ingress
// in its age order to use a backend creates its upstream (oldestFirst);
// each other one keeps serving with the winner's balancing and gets a
// warning Problem naming the backend and the winner. An Ingress without
// balancing annotations takes the backend's as it is and is no conflict.
// Backends no Ingress configures get the ConfigMap's load-balance.

// balancingPlugin is the built-in plugin whose annotations a canary Ingress
// keeps besides the canary ones: ingress-nginx applies load-balance,
// upstream-hash-by and affinity of a canary to the canary's backend.
const balancingPlugin = "balancing"

// balancingOf picks the balancing of backend name among its Ingresses'
// and returns the losers, each with the Ingress that won.
func (a *Annotator) balancingOf(name string) (*bus.Balancing, map[string]string) {
	var winner string
	var chosen *bus.Balancing
	var chosenJSON []byte
	var conflicts map[string]string
	for _, id := range a.oldestFirst(slices.Collect(a.backends.users[name].Values())) {
		b := a.balancing(id)
		if b == nil {
			continue
		}
		data, _ := json.Marshal(b)
		if chosen == nil {
			winner, chosen, chosenJSON = id, b, data
			continue
		}
		if string(data) != string(chosenJSON) {
			if conflicts == nil {
				conflicts = map[string]string{}
			}
			conflicts[id] = winner
		}
	}
	return chosen, conflicts
}

// balancing is the Balancing of Ingress id, nil when the plugins rejected
// it, denied it or gave it none.
func (a *Annotator) balancing(id string) *bus.Balancing {
	res := a.results[id]
	if res == nil || res.rejected || res.features == nil || res.features.Deny != nil {
		return nil
	}
	return res.features.Balancing
}

// balancingWarnings are the warnings of Ingress id for the backends where
// another Ingress's balancing won.
func (a *Annotator) balancingWarnings(id string) []bus.Problem {
	var problems []bus.Problem
	for _, name := range slices.Sorted(a.backends.usedBy[id].Values()) {
		winner, ok := a.backends.conflicts[name][id]
		if !ok {
			continue
		}
		problems = append(problems, bus.Problem{Field: "metadata.annotations", Reason: ReasonAnnotationWarning,
			Message: fmt.Sprintf("balancing annotations (load-balance, upstream-hash-by, affinity, session-cookie-*) not applied to backend %s: "+
				"Ingress %s shares it and sets different ones; the oldest Ingress wins, as in ingress-nginx", name, winner)})
	}
	return problems
}

// withoutBalancing is f as a location sees it: balancing goes to the
// backends, and leaving it out keeps a balancing change from touching
// the rendered servers.
func withoutBalancing(f *bus.Features) *bus.Features {
	if f == nil || f.Balancing == nil {
		return f
	}
	c := *f
	c.Balancing = nil
	if c.IsZero() {
		return nil
	}
	return &c
}

// applyBalancing sets b's balancing on backend, replacing whatever it had.
// A nil b applies defaultLoadBalance alone (the ConfigMap's load-balance);
// round_robin is left out, being Lua's default, so a backend nobody
// configured stays as translated. The backend gets copies: changing it
// leaves b alone.
func applyBalancing(b *bus.Balancing, backend *bus.Backend, defaultLoadBalance string) {
	backend.LoadBalance, backend.UpstreamHashByConfig, backend.SessionAffinityConfig = "", nil, nil
	lb := defaultLoadBalance
	if b != nil {
		if b.LoadBalance != "" {
			lb = b.LoadBalance
		}
		if b.UpstreamHash != nil {
			h := *b.UpstreamHash
			backend.UpstreamHashByConfig = &h
		}
		if b.Affinity != nil {
			a := *b.Affinity
			backend.SessionAffinityConfig = &a
		}
	}
	if lb != bus.LoadBalanceRoundRobin {
		backend.LoadBalance = lb
	}
}
