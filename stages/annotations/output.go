package annotations

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// The output: the annotated servers and the Ingresses' infos with the
// plugins' features and problems, as the renderer reads them.

// emit writes the touched servers with their features and the dirty
// Ingresses' infos with the plugins' problems added. An info the plugins
// add nothing to (most of them) goes out as the translator encoded it, in
// changed, rather than encoded again.
func (a *Annotator) emit(touched, dirty map[string]bool, changed map[string][]byte, out *bus.Output) error {
	var keys []string
	var servers []any
	for key := range touched {
		s, ok := a.servers[key]
		if !ok {
			out.Deletes = append(out.Deletes, key)
			continue
		}
		keys, servers = append(keys, key), append(servers, a.annotatedServer(s))
	}
	encoded, err := encodeAll(keys, servers)
	if err != nil {
		return err
	}
	for i, key := range keys {
		out.Puts[key] = encoded[i]
	}
	for id := range dirty {
		namespace, name, _ := strings.Cut(id, "/")
		key := bus.Key(bus.KindIngress, namespace, name)
		info, ok := a.ingresses[id]
		if !ok {
			out.Deletes = append(out.Deletes, key)
			continue
		}
		annotated := a.annotatedInfo(id, info)
		if data := changed[key]; annotated == info && data != nil {
			out.Puts[key] = data
			continue
		}
		data, err := json.Marshal(annotated)
		if err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		out.Puts[key] = data
	}
	return nil
}

// annotatedServer gives each location its Ingress's features and drops
// the locations of Ingresses the plugins rejected: nothing of a rejected
// Ingress is rendered.
func (a *Annotator) annotatedServer(s *bus.Server) *bus.Server {
	annotated := *s
	annotated.Locations = make([]bus.Location, 0, len(s.Locations))
	for _, loc := range s.Locations {
		res := a.results[loc.Ingress]
		if res != nil && res.rejected {
			continue
		}
		if res != nil {
			loc.Features = withoutBalancing(res.features)
		}
		annotated.Locations = append(annotated.Locations, loc)
	}
	a.applyServerFeatures(&annotated)
	if len(annotated.Locations) < len(s.Locations) && !hasRoot(annotated.Locations) {
		// The rejected Ingress held the host's "/": without a catch-all
		// NGINX would serve files from its prefix. Answer 404 instead.
		annotated.Locations = append(annotated.Locations, bus.Location{Path: "/", PathType: bus.PathPrefix})
	}
	return &annotated
}

func hasRoot(locs []bus.Location) bool {
	return slices.ContainsFunc(locs, func(l bus.Location) bool { return l.Path == "/" && l.PathType == bus.PathPrefix })
}

func (a *Annotator) annotatedInfo(id string, info *bus.IngressInfo) *bus.IngressInfo {
	res := a.results[id]
	warnings := a.balancingWarnings(id)
	if (res == nil || len(res.problems) == 0) && len(warnings) == 0 {
		return info
	}
	annotated := *info
	annotated.Problems = slices.Clone(info.Problems)
	if res != nil {
		annotated.Problems = append(annotated.Problems, res.problems...)
		annotated.Rejected = info.Rejected || res.rejected
	}
	annotated.Problems = append(annotated.Problems, warnings...)
	return &annotated
}

// Info is the annotated IngressInfo of the Ingress namespace/name, with the
// plugins' Problems; false when the translator did not take the Ingress
// (another class). The admission webhook reads its verdict here.
func (a *Annotator) Info(namespace, name string) (*bus.IngressInfo, bool) {
	id := namespace + "/" + name
	info, ok := a.ingresses[id]
	if !ok {
		return nil, false
	}
	return a.annotatedInfo(id, info), true
}
