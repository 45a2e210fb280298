// Package translator turns Kubernetes objects into Switchyard's model:
// servers with locations, backends with ready endpoints, certificates, and
// what was learned about each Ingress. It is pure (no I/O, no clock) and
// incremental: a change to one object recomputes only the Ingresses, hosts,
// backends and certificates that depend on it.
package translator

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/compact"
	"switchyard.dev/switchyard/internal/parallel"
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
	// ConfigMap is the controller ConfigMap, "namespace/name".
	ConfigMap string
	// DefaultBackendService, "namespace/name", answers what no Ingress
	// serves; empty means the built-in 404.
	DefaultBackendService string
	// AnnotationsPrefix is --annotations-prefix: the translator reads
	// <prefix>/canary to tell a canary Ingress from a conflicting one, and
	// publishes the Secrets <prefix>/auth-secret names for the plugins.
	// Empty means bus.DefaultAnnotationsPrefix.
	AnnotationsPrefix string
	// HostOwnership is who may add rules to a host: HostOwnershipAny (or
	// empty) lets every namespace, as ingress-nginx does;
	// HostOwnershipNamespace gives each host to the namespace of its oldest
	// Ingress.
	HostOwnership string
	// DefaultSSLCertificate, "namespace/name", is --default-ssl-certificate:
	// the kubernetes.io/tls Secret served to a TLS client whose name no
	// certificate covers (and to TLS hosts whose own Secret is missing).
	DefaultSSLCertificate string
	// TCPServicesConfigMap and UDPServicesConfigMap, "namespace/name", are
	// --tcp-services-configmap and --udp-services-configmap (streams.go).
	TCPServicesConfigMap, UDPServicesConfigMap string
	// ReservedPorts are the ports Switchyard itself listens on, with what
	// listens there: a TCP or UDP service may not take them.
	ReservedPorts map[int]string
	// DisableCatchAll is ingress-nginx's --disable-catch-all: an Ingress
	// with a defaultBackend and no rules (a catch-all) is not served, so
	// no namespace can take the requests no host matches.
	DisableCatchAll bool
	// DisableServiceExternalName is ingress-nginx's
	// --disable-svc-external-name: a path to a Service of type
	// ExternalName answers 503 instead of proxying to its DNS name.
	DisableServiceExternalName bool
	// IngressClassByName is ingress-nginx's --ingress-class-by-name: the
	// IngressClass named IngressClass is ours whatever controller it
	// names.
	IngressClassByName bool
}

// The values of Config.HostOwnership (--host-ownership).
const (
	// HostOwnershipAny: Ingresses of every namespace share a host; a path
	// two of them claim goes to the older one.
	HostOwnershipAny = "any"
	// HostOwnershipNamespace: a host belongs to the namespace of its oldest
	// Ingress (creationTimestamp, then namespace/name); other namespaces'
	// rules for it are not served and are reported.
	HostOwnershipNamespace = "namespace"
)

// ParseHostOwnership checks a --host-ownership value.
func ParseHostOwnership(v string) (string, error) {
	switch v {
	case "", HostOwnershipAny:
		return HostOwnershipAny, nil
	case HostOwnershipNamespace:
		return v, nil
	}
	return "", fmt.Errorf("host ownership %q: want %s or %s", v, HostOwnershipAny, HostOwnershipNamespace)
}

// DefaultConfig is what `switchyard run` uses without flags.
func DefaultConfig() Config {
	return Config{ControllerClass: "switchyard.dev/ingress-controller", IngressClass: "switchyard",
		AnnotationsPrefix: bus.DefaultAnnotationsPrefix}
}

// canaryKey is the annotation that marks a canary Ingress.
func (c Config) canaryKey() string {
	return c.annotationsPrefix() + "/canary"
}

func (c Config) annotationsPrefix() string {
	if c.AnnotationsPrefix == "" {
		return bus.DefaultAnnotationsPrefix
	}
	return c.AnnotationsPrefix
}

// Snapshot is a set of objects, for a full translation.
type Snapshot struct {
	Ingresses      []*networkingv1.Ingress
	IngressClasses []*networkingv1.IngressClass
	Services       []*corev1.Service
	EndpointSlices []*discoveryv1.EndpointSlice
	Secrets        []*corev1.Secret
	ConfigMaps     []*corev1.ConfigMap
}

// Translate builds the whole model from a snapshot. It is the incremental
// translator fed everything at once, so both share every rule.
func Translate(cfg Config, snap Snapshot) bus.Model {
	t := NewTranslator(cfg)
	for _, objs := range [][]any{anySlice(snap.IngressClasses), anySlice(snap.Services), anySlice(snap.EndpointSlices),
		anySlice(snap.Secrets), anySlice(snap.ConfigMaps), anySlice(snap.Ingresses)} {
		for _, o := range objs {
			t.Set(o)
		}
	}
	t.Flush()
	return t.Model()
}

func anySlice[T any](s []*T) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

const (
	legacyClassAnnotation  = "kubernetes.io/ingress.class"
	defaultClassAnnotation = "ingressclass.kubernetes.io/is-default-class"
	serviceNameLabel       = discoveryv1.LabelServiceName
)

// Delta is what one Flush changed in the model, by model key.
type Delta struct {
	Puts    map[string]any
	Deletes []string
}

func (d *Delta) put(key string, v any) {
	d.Puts[key] = v
}

// setModel puts v under key in the model map and the delta, or, when v is
// nil, removes key from the model and records its deletion.
func setModel[V any](m map[string]*V, key string, v *V, delta *Delta) {
	if v == nil {
		if _, ok := m[key]; ok {
			delete(m, key)
			delta.Deletes = append(delta.Deletes, key)
		}
		return
	}
	m[key] = v
	delta.put(key, v)
}

// Translator keeps the objects, what each Ingress asks for, and indexes
// from every object to the Ingresses that depend on it.
type Translator struct {
	cfg  Config
	objs objects

	plans          map[string]*ingressPlan             // by "namespace/name"
	hostIngresses  map[string]compact.Set              // host → Ingresses naming it
	svcUsers       map[string]compact.Set              // "ns/service" → Ingresses
	secretUsers    map[string]compact.Set              // "ns/secret" → Ingresses
	configMapUsers map[string]compact.Set              // "ns/configmap" → Ingresses (custom-headers)
	backendUsers   map[string]compact.Set              // backend name → Ingresses
	certUsers      map[string]compact.Set              // "ns/secret" → Ingresses using it as a certificate
	annSecretUsers map[string]compact.Set              // "ns/secret" → Ingresses naming it in an annotation
	hostProblems   map[string]map[string][]bus.Problem // host → Ingress → conflicts it lost there

	model            bus.Model
	dirty            dirtySet
	settingsProblems []bus.Problem
	// headerConfigMaps are the ConfigMaps add-headers and proxy-set-headers
	// name: a change of one of them re-reads the settings.
	headerConfigMaps map[string]bool
	// streamServiceKeys are the Services ("namespace/name") the TCP and UDP
	// services ConfigMaps name: a change of one resolves them again.
	streamServiceKeys map[string]bool
}

type dirtySet struct {
	all       bool
	ingresses map[string]bool
	hosts     map[string]bool
	backends  map[string]bool
	certs     map[string]bool
	secrets   map[string]bool // annotation Secrets, "ns/name"
	infos     map[string]bool
	settings  bool
	streams   bool // the TCP and UDP services (streams.go)
}

// sizeFor makes the sets replan fills room for n Ingresses' worth of
// hosts, backends and infos, when they are empty: at a start n is every
// Ingress, and maps grown one rehash at a time cost more than filling
// them.
func (d *dirtySet) sizeFor(n int) {
	for _, m := range []*map[string]bool{&d.hosts, &d.backends, &d.infos} {
		if len(*m) == 0 {
			*m = make(map[string]bool, n)
		}
	}
}

func newDirtySet() dirtySet {
	return dirtySet{ingresses: map[string]bool{}, hosts: map[string]bool{}, backends: map[string]bool{},
		certs: map[string]bool{}, secrets: map[string]bool{}, infos: map[string]bool{}}
}

// NewTranslator returns an empty translator.
func NewTranslator(cfg Config) *Translator {
	t := &Translator{
		cfg: cfg, objs: newObjects(),
		plans: map[string]*ingressPlan{}, hostIngresses: map[string]compact.Set{},
		svcUsers: map[string]compact.Set{}, secretUsers: map[string]compact.Set{}, configMapUsers: map[string]compact.Set{},
		backendUsers: map[string]compact.Set{}, certUsers: map[string]compact.Set{},
		annSecretUsers: map[string]compact.Set{},
		hostProblems:   map[string]map[string][]bus.Problem{},
		model:          bus.NewModel(), dirty: newDirtySet(),
	}
	t.dirty.hosts[bus.DefaultServerName] = true
	t.dirty.settings = true
	t.dirty.streams = true
	if cfg.DefaultBackendService != "" {
		t.dirty.backends[bus.DefaultBackendName] = true
	}
	return t
}

// Model is the current model. It is shared: read it, do not change it.
func (t *Translator) Model() bus.Model { return t.model }

// Set adds or replaces an object and marks what depends on it.
func (t *Translator) Set(obj any) { t.change(obj, false) }

// Delete removes an object (only its kind, namespace and name are read).
func (t *Translator) Delete(obj any) { t.change(obj, true) }

func (t *Translator) change(obj any, deleted bool) {
	switch o := obj.(type) {
	case *networkingv1.Ingress:
		t.objs.setIngress(o, deleted)
		t.dirty.ingresses[objectName(o.Namespace, o.Name)] = true
	case *networkingv1.IngressClass:
		t.objs.setClass(o, deleted)
		t.dirty.all = true // which Ingresses are ours may change
	case *corev1.Service:
		key := objectName(o.Namespace, o.Name)
		t.objs.setService(o, deleted)
		t.markUsers(t.svcUsers[key])
		t.markDefaultBackend(key)
		t.markStreams(key)
	case *discoveryv1.EndpointSlice:
		for _, svc := range t.objs.setSlice(o, deleted) {
			t.markUsers(t.svcUsers[svc])
			t.markDefaultBackend(svc)
			t.markStreams(svc)
		}
	case *corev1.Secret:
		key := objectName(o.Namespace, o.Name)
		t.objs.setSecret(o, deleted)
		t.markUsers(t.secretUsers[key])
		if key == t.cfg.DefaultSSLCertificate {
			t.dirty.certs[key] = true
		}
		if t.model.Settings != nil && key == t.model.Settings.SSLDHParam {
			t.dirty.settings = true
		}
	case *corev1.ConfigMap:
		key := objectName(o.Namespace, o.Name)
		t.objs.setConfigMap(o, deleted)
		if key == t.cfg.ConfigMap || t.headerConfigMaps[key] {
			t.dirty.settings = true
		}
		if t.isStreamConfigMap(key) {
			t.dirty.streams = true
		}
		t.markUsers(t.configMapUsers[key])
	}
}

func (t *Translator) markUsers(users compact.Set) {
	for _, ing := range users {
		t.dirty.ingresses[ing] = true
	}
}

// markStreams marks the TCP and UDP services when they name svc.
func (t *Translator) markStreams(svc string) {
	if t.streamServiceKeys[svc] {
		t.dirty.streams = true
	}
}

func (t *Translator) markDefaultBackend(svc string) {
	if svc == t.cfg.DefaultBackendService {
		t.dirty.backends[bus.DefaultBackendName] = true
	}
}

// Flush recomputes everything marked since the last Flush and returns the
// model keys that changed.
func (t *Translator) Flush() Delta {
	d := t.dirty
	t.dirty = newDirtySet()
	delta := Delta{Puts: map[string]any{}}
	if d.settings {
		// Settings first: strict-validate-path-type decides which paths
		// an Ingress may have, so a change replans every Ingress.
		// allow-cross-namespace-resources decides which Secrets and
		// ConfigMaps an Ingress may read.
		// service-upstream decides the endpoints of the backends of
		// Ingresses without the annotation.
		strict, cross, upstream := t.strictPathType(), t.crossNamespace(), t.serviceUpstreamDefault()
		t.refreshSettings(&delta)
		if t.strictPathType() != strict || t.crossNamespace() != cross || t.serviceUpstreamDefault() != upstream {
			d.all = true
		}
	}
	if d.all {
		for key := range t.objs.ingresses {
			d.ingresses[key] = true
		}
		for key := range t.plans {
			d.ingresses[key] = true
		}
	}
	if n := len(d.ingresses); n >= 64 {
		// A server, a backend and an info per Ingress, mostly.
		d.sizeFor(n)
		puts := make(map[string]any, 3*n+len(delta.Puts))
		maps.Copy(puts, delta.Puts)
		delta.Puts = puts
	}
	t.replanAll(slices.Collect(maps.Keys(d.ingresses)), &d)
	for host := range d.hosts {
		t.rebuildHost(host, &d, &delta)
	}
	for name := range d.backends {
		t.refreshBackend(name, &delta)
	}
	for id := range d.certs {
		t.refreshCertificate(id, &delta)
	}
	for id := range d.secrets {
		refreshShared(t, t.annSecretUsers, plannedSecrets, id, namespacedKey(bus.KindSecret, id), t.model.Secrets, &delta)
	}
	for key := range d.infos {
		t.refreshInfo(key, &delta)
	}
	if d.streams {
		t.refreshStreams(&delta)
	}
	sort.Strings(delta.Deletes)
	return delta
}

// replanAll replans the Ingresses under keys: their plans are made on
// every CPU (planning reads the translator's objects and changes
// nothing), then taken in one at a time.
func (t *Translator) replanAll(keys []string, d *dirtySet) {
	next := make([]*ingressPlan, len(keys))
	parallel.For(len(keys), 64, func(i int) { next[i] = t.nextPlan(keys[i]) })
	for i, key := range keys {
		t.takePlan(key, next[i], d)
	}
}

// nextPlan is the plan of the Ingress under key, nil when it is gone or
// not ours.
func (t *Translator) nextPlan(key string) *ingressPlan {
	if ing, ok := t.objs.ingresses[key]; ok && t.isOurs(ing) {
		return t.plan(ing)
	}
	return nil
}

// takePlan replaces the plan under key with next, marking what either
// touches as dirty.
func (t *Translator) takePlan(key string, next *ingressPlan, d *dirtySet) {
	old := t.plans[key]
	for _, p := range []*ingressPlan{old, next} {
		if p == nil {
			continue
		}
		for host := range p.hosts() {
			d.hosts[host] = true
		}
		for name := range p.backends {
			d.backends[name] = true
		}
		for id := range p.certs {
			d.certs[id] = true
		}
		for id := range p.annSecrets {
			d.secrets[id] = true
		}
	}
	d.infos[key] = true
	t.index(key, old, false)
	if next == nil {
		delete(t.plans, key)
		return
	}
	t.plans[key] = next
	t.index(key, next, true)
}

// index adds or removes one plan's entries in the reverse indexes.
func (t *Translator) index(key string, p *ingressPlan, add bool) {
	if p == nil {
		return
	}
	update := func(idx map[string]compact.Set, k string) { compact.Update(idx, k, key, add) }
	for host := range p.hosts() {
		update(t.hostIngresses, host)
	}
	for _, svc := range p.services {
		update(t.svcUsers, svc)
	}
	for _, s := range p.secrets {
		update(t.secretUsers, s)
	}
	for _, cm := range p.configMaps {
		update(t.configMapUsers, cm)
	}
	for name := range p.backends {
		update(t.backendUsers, name)
	}
	for id := range p.certs {
		update(t.certUsers, id)
	}
	for id := range p.annSecrets {
		update(t.annSecretUsers, id)
	}
}

func (t *Translator) isOurs(ing *networkingv1.Ingress) bool {
	if name := ing.Spec.IngressClassName; name != nil {
		class, ok := t.objs.classes[*name]
		return ok && (class.Spec.Controller == t.cfg.ControllerClass || (t.cfg.IngressClassByName && *name == t.cfg.IngressClass))
	}
	if v, ok := ing.Annotations[legacyClassAnnotation]; ok {
		return v == t.cfg.IngressClass
	}
	return t.cfg.WatchWithoutClass || t.objs.haveDefaultClass(t.cfg.ControllerClass)
}

type locationID struct{ path, pathType string }

// rebuildHost merges the plans of every Ingress naming host, oldest first:
// for the same path and path type the older Ingress keeps the location and
// the newer one is told so. Canary Ingresses come after: each of their
// paths attaches to the location serving the same path and path type (one
// canary per location), and is reported and not served when there is none.
func (t *Translator) rebuildHost(host string, d *dirtySet, delta *Delta) {
	problems := map[string][]bus.Problem{}
	plans := t.ownedPlans(host, t.hostPlans(host), problems)
	key := bus.Key(bus.KindServer, host)
	var primaries, canaries []*ingressPlan
	for _, p := range plans {
		if p.info.Canary {
			canaries = append(canaries, p)
		} else {
			primaries = append(primaries, p)
		}
	}
	if len(primaries) == 0 && host != bus.DefaultServerName {
		// Canaries alone make no server: there is nothing to be a canary of.
		for _, p := range canaries {
			for _, c := range p.claims[host] {
				if !c.fallback {
					problems[p.key] = append(problems[p.key], noPrimaryProblem(c, host))
				}
			}
		}
		t.setHostProblems(host, problems, d)
		setModel(t.model.Servers, key, nil, delta)
		return
	}
	server := &bus.Server{Hostname: host, Locations: []bus.Location{}}
	owners := map[locationID]string{}
	for _, p := range primaries {
		if overBudget(host, server, owners, p, problems) {
			continue
		}
		for _, c := range p.claims[host] {
			id := locationID{c.path, c.pathType}
			if prev, taken := owners[id]; taken {
				if !c.fallback {
					problems[p.key] = append(problems[p.key], conflictProblem(c, host, prev))
				}
				continue
			}
			owners[id] = p.key
			server.Locations = append(server.Locations, p.location(c))
		}
		if tls, ok := p.tls[host]; ok && server.TLS == nil && p.ruleHosts[host] {
			server.TLS = &bus.ServerTLS{Certificate: tls}
		}
	}
	t.attachCanaries(host, server, canaries, problems)
	if _, ok := owners[locationID{"/", bus.PathPrefix}]; !ok {
		server.Locations = append(server.Locations, bus.Location{Path: "/", PathType: bus.PathPrefix, Backend: t.defaultBackend()})
	}
	sortLocations(server.Locations)
	t.setHostProblems(host, problems, d)
	setModel(t.model.Servers, key, server, delta)
}

// ownedPlans keeps, under HostOwnershipNamespace, the plans of the
// namespace that owns host: the namespace of its oldest Ingress (plans come
// oldest first; a canary owns nothing while a primary Ingress names the
// host). Every other namespace's Ingress is told who owns the host; its
// rules for other hosts are unaffected. The catch-all server ("*": rules
// without a host, default backends) is owned the same way.
func (t *Translator) ownedPlans(host string, plans []*ingressPlan, problems map[string][]bus.Problem) []*ingressPlan {
	if t.cfg.HostOwnership != HostOwnershipNamespace || len(plans) == 0 {
		return plans
	}
	owner := plans[0]
	if i := slices.IndexFunc(plans, func(p *ingressPlan) bool { return !p.info.Canary }); i >= 0 {
		owner = plans[i]
	}
	ns := owner.info.Namespace
	kept := make([]*ingressPlan, 0, len(plans))
	for _, p := range plans {
		if p.info.Namespace == ns {
			kept = append(kept, p)
			continue
		}
		problems[p.key] = append(problems[p.key], bus.Problem{Field: t.hostField(p.key, host), Reason: "HostOwnedByAnotherNamespace",
			Message: fmt.Sprintf("host %q belongs to namespace %s, whose Ingress %s is the oldest naming it (--host-ownership=namespace); this Ingress's rules for it are not served",
				displayHost(host), ns, owner.key)})
	}
	return kept
}

// hostField is the field of an Ingress that names host, for a Problem.
func (t *Translator) hostField(ingKey, host string) string {
	if ing, ok := t.objs.ingresses[ingKey]; ok {
		for i, r := range ing.Spec.Rules {
			if normalizeHost(r.Host) == host {
				return fmt.Sprintf("spec.rules[%d].host", i)
			}
		}
	}
	return "spec.defaultBackend"
}

// attachCanaries gives each location the oldest canary Ingress naming its
// path and path type. A canary's spec.defaultBackend (a fallback claim) is
// not a path and attaches nowhere, silently.
func (t *Translator) attachCanaries(host string, server *bus.Server, canaries []*ingressPlan, problems map[string][]bus.Problem) {
	at := map[locationID]int{}
	for i, l := range server.Locations {
		at[locationID{l.Path, l.PathType}] = i
	}
	for _, p := range canaries {
		for _, c := range p.claims[host] {
			if c.fallback {
				continue
			}
			i, ok := at[locationID{c.path, c.pathType}]
			if !ok {
				problems[p.key] = append(problems[p.key], noPrimaryProblem(c, host))
				continue
			}
			loc := &server.Locations[i]
			switch {
			case loc.Canary != nil:
				if loc.Canary.Ingress != p.key {
					problems[p.key] = append(problems[p.key], bus.Problem{Field: c.field, Reason: "CanaryConflict", Message: fmt.Sprintf(
						"%s %s on host %q already has the canary %s (only one canary per path); this canary is ignored",
						c.pathType, c.path, displayHost(host), loc.Canary.Ingress)})
				}
			case loc.Backend == c.backend:
				problems[p.key] = append(problems[p.key], bus.Problem{Field: c.field, Reason: "CanaryConflict", Message: fmt.Sprintf(
					"%s %s on host %q: the canary uses the same backend %s as %s; this canary is ignored",
					c.pathType, c.path, displayHost(host), c.backend, loc.Ingress)})
			default:
				loc.Canary = &bus.LocationCanary{Ingress: p.key, Backend: c.backend}
			}
		}
	}
}

func noPrimaryProblem(c claim, host string) bus.Problem {
	return bus.Problem{Field: c.field, Reason: "CanaryWithoutPrimary", Message: fmt.Sprintf(
		"canary Ingress: no Ingress serves %s %s on host %q, so this path is not served", c.pathType, c.path, displayHost(host))}
}

// hostPlans lists the plans naming host, oldest first in ingress-nginx's
// order (bus.CompareIngressAge), so a conflict never depends on map order
// and a cluster that moves over keeps serving each path from the same
// Ingress.
func (t *Translator) hostPlans(host string) []*ingressPlan {
	var plans []*ingressPlan
	for _, key := range t.hostIngresses[host] {
		if p := t.plans[key]; p != nil && !p.info.Rejected {
			plans = append(plans, p)
		}
	}
	slices.SortFunc(plans, func(a, b *ingressPlan) int {
		return bus.CompareIngressAge(a.info.Created, a.key, b.info.Created, b.key)
	})
	return plans
}

// setHostProblems records the conflicts found on host and marks every
// Ingress whose conflicts there changed.
func (t *Translator) setHostProblems(host string, problems map[string][]bus.Problem, d *dirtySet) {
	for ing := range t.hostProblems[host] {
		d.infos[ing] = true
	}
	for ing := range problems {
		d.infos[ing] = true
	}
	if len(problems) == 0 {
		delete(t.hostProblems, host)
		return
	}
	t.hostProblems[host] = problems
}

func (t *Translator) defaultBackend() string {
	if t.cfg.DefaultBackendService != "" {
		return bus.DefaultBackendName
	}
	return ""
}

func sortLocations(locs []bus.Location) {
	sort.Slice(locs, func(i, j int) bool {
		a, b := locs[i], locs[j]
		if len(a.Path) != len(b.Path) {
			return len(a.Path) > len(b.Path)
		}
		if a.Path != b.Path {
			return a.Path > b.Path
		}
		return a.PathType < b.PathType
	})
}

// refreshBackend publishes one backend: the default backend's Service when
// --default-backend-service names one, else as its first user planned it.
func (t *Translator) refreshBackend(name string, delta *Delta) {
	key := bus.Key(bus.KindBackend, name)
	if name == bus.DefaultBackendName && t.cfg.DefaultBackendService != "" {
		setModel(t.model.Backends, key, t.defaultBackendService(), delta)
		return
	}
	refreshShared(t, t.backendUsers, plannedBackends, name, key, t.model.Backends, delta)
}

// refreshShared publishes one object that several Ingresses may name (a
// backend, a certificate, an annotation Secret) under key: as the first of
// its users (by namespace/name) planned it, or deleted once none names it.
// An annotation Secret's data goes to the annotations stage only.
func refreshShared[V any](t *Translator, users map[string]compact.Set, planned func(*ingressPlan) map[string]*V,
	id, key string, published map[string]*V, delta *Delta) {
	var v *V
	if u := users[id]; len(u) > 0 {
		v = planned(t.plans[u[0]])[id]
	}
	setModel(published, key, v, delta)
}

// refreshCertificate publishes one certificate as its Ingresses planned it;
// the --default-ssl-certificate is published, marked, whether or not an
// Ingress names it.
func (t *Translator) refreshCertificate(id string, delta *Delta) {
	key := namespacedKey(bus.KindCertificate, id)
	if id != t.cfg.DefaultSSLCertificate {
		refreshShared(t, t.certUsers, plannedCertificates, id, key, t.model.Certificates, delta)
		return
	}
	setModel(t.model.Certificates, key, t.defaultCertificate(), delta)
}

// defaultCertificate is the --default-ssl-certificate, or nil while its
// Secret is missing or holds no valid pair: NGINX's self-signed one is
// served then.
func (t *Translator) defaultCertificate() *bus.Certificate {
	ns, name, _ := strings.Cut(t.cfg.DefaultSSLCertificate, "/")
	secret, ok := t.objs.secrets[t.cfg.DefaultSSLCertificate]
	if !ok {
		return nil
	}
	pem, err := keyPairPEM(secret)
	if err != nil {
		return nil
	}
	return &bus.Certificate{Namespace: ns, Name: name, PEM: pem, Default: true}
}

// What one Ingress's plan holds of each shared kind, by id.
func plannedBackends(p *ingressPlan) map[string]*bus.Backend         { return p.backends }
func plannedCertificates(p *ingressPlan) map[string]*bus.Certificate { return p.certs }
func plannedSecrets(p *ingressPlan) map[string]*bus.Secret           { return p.annSecrets }

// namespacedKey is the model key of a "namespace/name" id.
func namespacedKey(kind, id string) string {
	ns, name, _ := strings.Cut(id, "/")
	return bus.Key(kind, ns, name)
}

// refreshInfo assembles what is known about one Ingress: its own problems
// and the conflicts it lost on each of its hosts.
func (t *Translator) refreshInfo(ingKey string, delta *Delta) {
	ns, name, _ := strings.Cut(ingKey, "/")
	key := bus.Key(bus.KindIngress, ns, name)
	p := t.plans[ingKey]
	if p == nil {
		setModel(t.model.Ingresses, key, nil, delta)
		return
	}
	info := p.info
	info.Problems = append([]bus.Problem(nil), p.info.Problems...)
	for _, host := range sortedHosts(p.hosts()) {
		info.Problems = append(info.Problems, t.hostProblems[host][ingKey]...)
	}
	setModel(t.model.Ingresses, key, &info, delta)
}

// refreshSettings parses the controller ConfigMap. Invalid keys keep their
// defaults and are reported; a missing ConfigMap means all defaults.
func (t *Translator) refreshSettings(delta *Delta) {
	var data map[string]string
	if cm, ok := t.objs.configMaps[t.cfg.ConfigMap]; ok {
		data = cm.Data
	}
	s, problems := parseSettings(data)
	problems = append(problems, resolveHeaders(&s, t.objs.configMaps)...)
	problems = append(problems, resolveDHParam(&s, t.objs.secrets)...)
	t.headerConfigMaps = headerConfigMaps(&s)
	t.settingsProblems = problems
	s.Problems = problems
	t.model.Settings = &s
	delta.put(bus.SettingsKey, &s)
}

// strictPathType is strict-validate-path-type of the parsed settings.
func (t *Translator) strictPathType() bool {
	if t.model.Settings == nil {
		return bus.DefaultSettings().StrictValidatePathType
	}
	return t.model.Settings.StrictValidatePathType
}

// crossNamespace is allow-cross-namespace-resources of the parsed
// settings: whether annotations may name other namespaces' Secrets and
// ConfigMaps.
func (t *Translator) crossNamespace() bool {
	return t.model.Settings != nil && t.model.Settings.AllowCrossNamespaceResources
}

// serviceUpstreamDefault is service-upstream of the parsed settings: the
// default of the annotation.
func (t *Translator) serviceUpstreamDefault() bool {
	return t.model.Settings != nil && t.model.Settings.ServiceUpstream
}

// SettingsProblems are the problems found in the controller ConfigMap by
// the last Flush that parsed it.
func (t *Translator) SettingsProblems() []bus.Problem { return t.settingsProblems }

func sortedHosts[V any](m map[string]V) []string {
	hosts := make([]string, 0, len(m))
	for h := range m {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	return hosts
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

// Add puts a decoded object into the snapshot by its type.
func (s *Snapshot) Add(obj any) {
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
