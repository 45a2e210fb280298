package translator

import (
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// Limits on what one Ingress may ask for. A tenant may create Ingresses in
// its own namespace only, but those can name any host: without a bound,
// one Ingress could make another tenant's server file too large to publish
// or to reload quickly. An Ingress over a limit is rejected whole, with a
// Problem naming the limit; everything else keeps being served.
const (
	// MaxPathsPerIngress bounds the paths of one Ingress, over all its
	// rules (ingress-nginx has no such limit; 1,000 is far beyond any
	// hand-written Ingress).
	MaxPathsPerIngress = 1000
	// MaxPathLength bounds one path. NGINX 1.22 never matches an exact
	// location longer than 256 bytes (the request falls through to the
	// host's "/", which may be another namespace's), and every Exact or
	// Prefix path is rendered as one: a longer path is refused, not
	// silently routed elsewhere.
	MaxPathLength = 255
	// MaxLocationsPerServer bounds the locations of one host. Ingresses
	// are merged oldest first, so an Ingress that would take a host over
	// it is the newer one: it is not served on that host, and the host's
	// older Ingresses (its owner's) are kept.
	MaxLocationsPerServer = 2000
)

// checkLimits reports an Ingress that is too large to be served: the
// watcher's stand-in for one over the bus limit, or one over the limits
// above.
func checkLimits(ing *networkingv1.Ingress) []bus.Problem {
	if size, ok := ing.Annotations[bus.AnnotationTooLarge]; ok {
		return []bus.Problem{{Field: "metadata", Reason: "TooLarge", Message: fmt.Sprintf(
			"the Ingress is %s bytes, over the bus limit of %d bytes: it is not served (move large annotation values out, or split its paths across Ingresses)",
			size, bus.MaxValue)}}
	}
	if n := countPaths(ing); n > MaxPathsPerIngress {
		return []bus.Problem{{Field: "spec.rules", Reason: "TooManyPaths", Message: fmt.Sprintf(
			"%d paths, over the limit of %d per Ingress: it is not served (split it across Ingresses)", n, MaxPathsPerIngress)}}
	}
	return longPaths(ing)
}

func countPaths(ing *networkingv1.Ingress) int {
	n := 0
	for _, rule := range ing.Spec.Rules {
		if rule.HTTP != nil {
			n += len(rule.HTTP.Paths)
		}
	}
	return n
}

// longPaths reports the paths over MaxPathLength, the first ten at most.
func longPaths(ing *networkingv1.Ingress) []bus.Problem {
	var problems []bus.Problem
	for i, rule := range ing.Spec.Rules {
		if rule.HTTP == nil {
			continue
		}
		for j, p := range rule.HTTP.Paths {
			if len(p.Path) <= MaxPathLength {
				continue
			}
			problems = append(problems, bus.Problem{Field: fmt.Sprintf("spec.rules[%d].http.paths[%d].path", i, j), Reason: "PathTooLong",
				Message: fmt.Sprintf("%d bytes, over the limit of %d per path (NGINX does not match longer exact locations): the Ingress is not served",
					len(p.Path), MaxPathLength)})
			if len(problems) == 10 {
				return problems // enough to act on
			}
		}
	}
	return problems
}

// overBudget says whether p's claims on host would take server over
// MaxLocationsPerServer, and if so reports it on p: p is then not served on
// that host. Only locations p would add count (not those already taken).
func overBudget(host string, server *bus.Server, owners map[locationID]string, p *ingressPlan, problems map[string][]bus.Problem) bool {
	added := map[locationID]bool{}
	for _, c := range p.claims[host] {
		if id := (locationID{c.path, c.pathType}); owners[id] == "" {
			added[id] = true
		}
	}
	total := len(server.Locations) + len(added)
	if total <= MaxLocationsPerServer {
		return false
	}
	problems[p.key] = append(problems[p.key], bus.Problem{Field: "spec.rules", Reason: "ServerTooLarge", Message: fmt.Sprintf(
		"host %q would have %d locations with this Ingress, over the limit of %d per host: it is not served on this host (older Ingresses of the host are kept)",
		displayHost(host), total, MaxLocationsPerServer)})
	return true
}
