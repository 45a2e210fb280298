package annotations

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// Server features (plugins/builtin/server) set the server of an Ingress's
// hosts, not its locations: here they are checked against the other
// servers and put on each server the Ingress has a location on.

// checkAliases leaves out of res the aliases that are another server's
// host name (NGINX would ignore them with a warning, and the host's own
// Ingresses would lose it), with a warning on the Ingress.
func (a *Annotator) checkAliases(res *ingressResult) {
	if res.features == nil || res.features.Server == nil || len(res.features.Server.Aliases) == 0 {
		return
	}
	hosts := map[string]bool{}
	for _, s := range a.servers {
		hosts[s.Hostname] = true
	}
	srv := *res.features.Server
	srv.Aliases = nil
	for _, alias := range res.features.Server.Aliases {
		if hosts[alias] {
			res.problems = append(res.problems, bus.Problem{Field: "metadata.annotations[" + a.displayKey("server-alias") + "]",
				Reason: ReasonAnnotationWarning, Message: fmt.Sprintf("server alias %s is left out: it is the host of an Ingress rule", alias)})
			continue
		}
		srv.Aliases = append(srv.Aliases, alias)
	}
	res.features.Server = &srv
}

// applyServerFeatures sets the server-level fields of annotated from the
// Ingresses of its locations: for each field, the first Ingress that sets
// it in ingress-nginx's order (serverIngresses); mutual TLS (ClientAuth)
// likewise, as one.
func (a *Annotator) applyServerFeatures(annotated *bus.Server) {
	annotated.Aliases, annotated.SSLCiphers, annotated.SSLPreferServerCiphers, annotated.ServerFeaturesFrom = nil, "", nil, ""
	annotated.ClientAuth, annotated.ClientAuthFrom = nil, ""
	annotated.SSLPassthrough, annotated.PassthroughBackend, annotated.PassthroughFrom = false, "", ""
	for _, id := range a.serverIngresses(annotated) {
		res := a.results[id]
		if res == nil || res.rejected || res.features == nil {
			continue
		}
		if !annotated.SSLPassthrough && res.features.Passthrough != nil && passthroughHost(annotated.Hostname) {
			if backend := rootBackend(annotated); backend != "" {
				annotated.SSLPassthrough, annotated.PassthroughBackend, annotated.PassthroughFrom = true, backend, id
			}
		}
		if annotated.ClientAuth == nil && res.features.ClientAuth != nil {
			annotated.ClientAuth, annotated.ClientAuthFrom = res.features.ClientAuth, id
		}
		srv := res.features.Server
		if srv == nil {
			continue
		}
		if annotated.Aliases == nil && len(srv.Aliases) > 0 {
			annotated.Aliases = slices.Clone(srv.Aliases)
		}
		if annotated.SSLCiphers == "" && srv.SSLCiphers != "" {
			annotated.SSLCiphers, annotated.ServerFeaturesFrom = srv.SSLCiphers, id
		}
		if annotated.SSLPreferServerCiphers == nil {
			annotated.SSLPreferServerCiphers = srv.SSLPreferServerCiphers
		}
	}
}

// serverIngresses are the Ingresses of s's locations, oldest first.
func (a *Annotator) serverIngresses(s *bus.Server) []string {
	ids := map[string]bool{}
	for _, loc := range s.Locations {
		if loc.Ingress != "" {
			ids[loc.Ingress] = true
		}
	}
	return a.oldestFirst(slices.Collect(maps.Keys(ids)))
}

// oldestFirst sorts Ingresses ("namespace/name") in ingress-nginx's order
// (bus.CompareIngressAge), which decides what Ingresses sharing a server
// or a backend get when they ask different things of it. An Ingress
// whose information has not arrived counts as the newest.
func (a *Annotator) oldestFirst(ids []string) []string {
	slices.SortFunc(ids, func(x, y string) int {
		return bus.CompareIngressAge(a.created(x), x, a.created(y), y)
	})
	return ids
}

func (a *Annotator) created(id string) int64 {
	if info := a.ingresses[id]; info != nil {
		return info.Created
	}
	return math.MaxInt64
}

// rootBackend is the backend of the host's "/" prefix path, which
// ingress-nginx passes TLS through to; "" when the host has none (or it
// goes to the built-in default backend).
func rootBackend(s *bus.Server) string {
	for _, loc := range s.Locations {
		if loc.Path == "/" && loc.PathType == bus.PathPrefix && loc.Backend != "" {
			return loc.Backend
		}
	}
	return ""
}

// passthroughHost says whether TLS for hostname can be passed through: an
// exact name (SNI carries one), not a wildcard or the catch-all server.
func passthroughHost(hostname string) bool {
	return hostname != bus.DefaultServerName && !strings.HasPrefix(hostname, "*.")
}

// checkPassthrough reports what keeps an Ingress's ssl-passthrough from
// taking effect, with a warning on the Ingress: without
// --enable-ssl-passthrough ingress-nginx ignores it (the group is dropped,
// the hosts are terminated by NGINX); a host without a "/" path has no
// backend to pass TLS to and is terminated.
func (a *Annotator) checkPassthrough(id string, res *ingressResult) {
	if res.features == nil || res.features.Passthrough == nil {
		return
	}
	field := "metadata.annotations[" + a.displayKey("ssl-passthrough") + "]"
	if !a.passthrough {
		res.features.Passthrough = nil
		res.problems = append(res.problems, bus.Problem{Field: field, Reason: ReasonAnnotationWarning,
			Message: "ssl-passthrough has no effect without --enable-ssl-passthrough: TLS of the Ingress's hosts is terminated by NGINX"})
		return
	}
	for _, key := range a.serversOf[id] {
		s := a.servers[key]
		switch {
		case s == nil:
		case !passthroughHost(s.Hostname):
			res.problems = append(res.problems, bus.Problem{Field: field, Reason: ReasonAnnotationWarning,
				Message: fmt.Sprintf("host %s: only exact host names are passed through (by their SNI name); its TLS is terminated by NGINX", s.Hostname)})
		case rootBackend(s) == "":
			res.problems = append(res.problems, bus.Problem{Field: field, Reason: ReasonAnnotationWarning,
				Message: fmt.Sprintf("host %s has no \"/\" path with a backend to pass TLS through to: its TLS is terminated by NGINX", s.Hostname)})
		}
	}
}
