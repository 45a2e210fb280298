// Package translator turns Kubernetes objects into Switchyard's model:
// servers with locations, backends with ready endpoints, certificates, and
// what was learned about each Ingress. Translate is pure: no I/O, no clock.
package translator

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// Config selects which Ingresses are ours, as ingress-nginx's flags do.
type Config struct {
	// ControllerClass is the IngressClass spec.controller we serve.
	ControllerClass string
	// IngressClass is the value of the legacy kubernetes.io/ingress.class
	// annotation we serve.
	IngressClass string
	// WatchWithoutClass serves Ingresses that name no class at all.
	WatchWithoutClass bool
}

// DefaultConfig is what `switchyard run` uses without flags.
func DefaultConfig() Config {
	return Config{ControllerClass: "switchyard.dev/ingress-controller", IngressClass: "switchyard"}
}

// Snapshot is every object the watcher published, decoded.
type Snapshot struct {
	Ingresses      []*networkingv1.Ingress
	IngressClasses []*networkingv1.IngressClass
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	Secrets        []*corev1.Secret
	ConfigMaps     []*corev1.ConfigMap
}

const (
	legacyClassAnnotation  = "kubernetes.io/ingress.class"
	defaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
	serviceNameLabel       = discoveryv1.LabelServiceName
)

// Translate builds the model. Ingresses are processed oldest first, so when
// two claim the same host, path and path type, the older one keeps it.
func Translate(cfg Config, snap Snapshot) bus.Model {
	t := newTranslation(cfg, snap)
	for _, ing := range t.ourIngresses() {
		t.addIngress(ing)
	}
	t.finish()
	return t.model
}

type translation struct {
	cfg    Config
	snap   Snapshot
	idx    index
	model  bus.Model
	owners map[locationID]string // which Ingress owns a location
}

type locationID struct{ host, path, pathType string }

func newTranslation(cfg Config, snap Snapshot) *translation {
	return &translation{
		cfg:    cfg,
		snap:   snap,
		idx:    buildIndex(snap),
		model:  bus.NewModel(),
		owners: map[locationID]string{},
	}
}

// ourIngresses filters by class and sorts oldest first, then by
// namespace/name, so the outcome of a conflict never depends on map order.
func (t *translation) ourIngresses() []*networkingv1.Ingress {
	var ours []*networkingv1.Ingress
	for _, ing := range t.snap.Ingresses {
		if t.isOurs(ing) {
			ours = append(ours, ing)
		}
	}
	sort.SliceStable(ours, func(i, j int) bool {
		a, b := ours[i], ours[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return objectName(a.Namespace, a.Name) < objectName(b.Namespace, b.Name)
	})
	return ours
}

func (t *translation) isOurs(ing *networkingv1.Ingress) bool {
	if name := ing.Spec.IngressClassName; name != nil {
		class, ok := t.idx.classes[*name]
		return ok && class.Spec.Controller == t.cfg.ControllerClass
	}
	if v, ok := ing.Annotations[legacyClassAnnotation]; ok {
		return v == t.cfg.IngressClass
	}
	return t.cfg.WatchWithoutClass || t.idx.haveDefaultClass(t.cfg.ControllerClass)
}

func (t *translation) addIngress(ing *networkingv1.Ingress) {
	info := &bus.IngressInfo{
		Namespace:   ing.Namespace,
		Name:        ing.Name,
		Generation:  ing.Generation,
		Annotations: ing.Annotations,
	}
	t.model.Ingresses[bus.Key(bus.KindIngress, ing.Namespace, ing.Name)] = info
	if problems := validateIngress(ing); len(problems) > 0 {
		info.Rejected = true
		info.Problems = problems
		return
	}
	owner := objectName(ing.Namespace, ing.Name)
	tlsHosts := t.addTLS(ing, info)

	var defaultBackend string
	if db := ing.Spec.DefaultBackend; db != nil {
		defaultBackend = t.backendFor(ing, db, "spec.defaultBackend", info)
		if len(ing.Spec.Rules) == 0 {
			t.claim(bus.DefaultServerName, "/", bus.PathPrefix, defaultBackend, owner, "spec.defaultBackend", info)
		}
	}
	for i, rule := range ing.Spec.Rules {
		host := normalizeHost(rule.Host)
		server := t.server(host)
		if tlsHosts[host] != nil && server.TLS == nil {
			server.TLS = tlsHosts[host]
		}
		if rule.HTTP != nil {
			for j, p := range rule.HTTP.Paths {
				field := fmt.Sprintf("spec.rules[%d].http.paths[%d]", i, j)
				backend := t.backendFor(ing, &p.Backend, field+".backend", info)
				t.claim(host, pathOf(p), pathTypeOf(p), backend, owner, field, info)
			}
		}
		// The Ingress's default backend answers the host's unmatched paths.
		if defaultBackend != "" {
			t.claimIfFree(host, "/", bus.PathPrefix, defaultBackend, owner)
		}
	}
}

// claim gives a location to an Ingress unless an older one has it.
func (t *translation) claim(host, path, pathType, backend, owner, field string, info *bus.IngressInfo) {
	id := locationID{host, path, pathType}
	if prev, taken := t.owners[id]; taken {
		info.Problems = append(info.Problems, bus.Problem{
			Field:   field,
			Reason:  "PathConflict",
			Message: fmt.Sprintf("%s %s on host %q is already served by the older Ingress %s", pathType, path, displayHost(host), prev),
		})
		return
	}
	t.claimIfFree(host, path, pathType, backend, owner)
}

func (t *translation) claimIfFree(host, path, pathType, backend, owner string) {
	id := locationID{host, path, pathType}
	if _, taken := t.owners[id]; taken {
		return
	}
	t.owners[id] = owner
	server := t.server(host)
	server.Locations = append(server.Locations, bus.Location{
		Path: path, PathType: pathType, Backend: backend, Ingress: owner,
	})
}

func (t *translation) server(host string) *bus.Server {
	key := bus.Key(bus.KindServer, host)
	s, ok := t.model.Servers[key]
	if !ok {
		s = &bus.Server{Hostname: host}
		t.model.Servers[key] = s
	}
	return s
}

// finish adds the default server and a root location to every server, and
// puts locations in a stable order: longest path first, as ingress-nginx.
func (t *translation) finish() {
	t.server(bus.DefaultServerName)
	for _, s := range t.model.Servers {
		if !hasLocation(s, "/", bus.PathPrefix) {
			s.Locations = append(s.Locations, bus.Location{Path: "/", PathType: bus.PathPrefix})
		}
		sort.Slice(s.Locations, func(i, j int) bool {
			a, b := s.Locations[i], s.Locations[j]
			if len(a.Path) != len(b.Path) {
				return len(a.Path) > len(b.Path)
			}
			if a.Path != b.Path {
				return a.Path > b.Path
			}
			return a.PathType < b.PathType
		})
	}
}

func hasLocation(s *bus.Server, path, pathType string) bool {
	for _, l := range s.Locations {
		if l.Path == path && l.PathType == pathType {
			return true
		}
	}
	return false
}

func pathOf(p networkingv1.HTTPIngressPath) string {
	if p.Path == "" {
		return "/"
	}
	return p.Path
}

// pathTypeOf maps ImplementationSpecific (and unset) to Prefix, as
// ingress-nginx does when no regex annotation is involved.
func pathTypeOf(p networkingv1.HTTPIngressPath) string {
	if p.PathType != nil && *p.PathType == networkingv1.PathTypeExact {
		return bus.PathExact
	}
	return bus.PathPrefix
}

func normalizeHost(h string) string {
	if h == "" {
		return bus.DefaultServerName
	}
	return strings.ToLower(h)
}

func displayHost(h string) string {
	if h == bus.DefaultServerName {
		return "*"
	}
	return h
}

func objectName(ns, name string) string { return ns + "/" + name }
