package renderer

// Attribution and refusals (bus/refusals.go): every rendered part says in a
// comment which Ingress or ConfigMap key it comes from, with the revision
// rendered, so the applier can trace a configuration NGINX refuses to its
// source. A refused source whose revision is still the one refused is left
// out (an Ingress) or falls back to its default (a ConfigMap key), so that
// everything else is served; a changed source is tried again.

import (
	"encoding/json"
	"maps"
	"reflect"
	"slices"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/compact"
)

// TestRefusedDirective is the directive the test-only option
// (Config.TestRefuseIngresses) writes into the locations of the Ingresses
// it names: a fixed word NGINX does not know, so `nginx -t` refuses it.
const TestRefusedDirective = "switchyard_test_refused_directive on;"

// sourceSwitchyard is the comment of lines that come from no object.
const sourceSwitchyard = "# source switchyard"

// refusalState is what the renderer tracks for attribution.
type refusalState struct {
	refusals map[string]bus.Refusal // by table key
	// ingServers lists the servers (model keys) holding locations of each
	// Ingress.
	ingServers map[string]compact.Set
	// excluded are the Ingresses left out, refusedKeys the ConfigMap keys
	// at their default: the refusals this render honours, with the
	// revision refused.
	excluded    map[string]string
	refusedKeys map[string]string
	// excludedServices are the services entries left out, by
	// "<protocol>/<port>" (streams_refusals.go).
	excludedServices map[string]string
	// changed: refusals, settings or a refused Ingress changed since the
	// last Flush.
	changed bool
}

func newRefusalState() refusalState {
	return refusalState{
		refusals:   map[string]bus.Refusal{},
		ingServers: map[string]compact.Set{},
		excluded:   map[string]string{}, refusedKeys: map[string]string{},
		excludedServices: map[string]string{},
	}
}

// SetRefusal adds, replaces (or with nil removes) the applier's refusal
// under its table key.
func (r *Renderer) SetRefusal(key string, ref *bus.Refusal) {
	if ref == nil {
		delete(r.ref.refusals, key)
	} else {
		r.ref.refusals[key] = *ref
	}
	r.ref.changed = true
}

// indexIngresses records which Ingresses have locations on the server
// under key.
func (r *Renderer) indexIngresses(key string, s *bus.Server, add bool) {
	for _, l := range s.Locations {
		if l.Ingress == "" {
			continue
		}
		compact.Update(r.ref.ingServers, l.Ingress, key, add)
	}
	r.ref.changed = true
}

// ingressRev is an Ingress's revision on one server: its locations there
// with what of them is rendered into the file. What goes to Lua only (the
// canary, balancing) is left out: a change to it must not change the file,
// which would reload NGINX, and cannot make NGINX refuse anything. A change
// to the Ingress's part of one host changes only that host's file.
func (r *Renderer) ingressRev(name, key string) string {
	parts := [][]byte{[]byte(name)}
	if s := r.servers[key]; s != nil {
		parts = append(parts, []byte(s.Hostname))
		for _, l := range s.Locations {
			if l.Ingress == name {
				data, _ := json.Marshal(renderedPart(l))
				parts = append(parts, data)
			}
		}
	}
	return sourceRev(parts...)
}

// renderedPart is a location without what reaches Lua only.
func renderedPart(l bus.Location) bus.Location {
	l.Canary = nil
	if l.Features != nil {
		f := *l.Features
		f.Canary, f.Balancing = nil, nil
		l.Features = &f
		if reflect.ValueOf(f).IsZero() {
			l.Features = nil // as if it never had any
		}
	}
	return l
}

// updateRefusals decides which refusals hold: an Ingress is left out when
// its revision on one of its servers is the refused one, a ConfigMap key
// falls back when its value's revision is. The servers whose rendering
// that changes are marked. It returns whether nginx.conf must be rendered
// again (its "# refused" lines), and whether the settings changed, which
// every file depends on.
func (r *Renderer) updateRefusals() (mainFile, settings bool) {
	if !r.ref.changed {
		return false, false
	}
	r.ref.changed = false
	excluded := map[string]string{}
	keys := map[string]string{}
	services := map[string]string{}
	serviceRevs := r.serviceRevs()
	for _, ref := range r.ref.refusals {
		switch ref.Kind {
		case bus.RefusedIngress:
			if r.ingressHasRev(ref.Name, ref.Rev) {
				excluded[ref.Name] = ref.Rev
			}
		case bus.RefusedConfigMap:
			if rev := settingRev(&r.settings, ref.Name); rev != "" && rev == ref.Rev {
				keys[ref.Name] = rev
			}
		case bus.RefusedServices:
			if serviceRevs[ref.Name] == ref.Rev {
				services[ref.Name] = ref.Rev
			}
		}
	}
	for name := range excluded {
		if _, was := r.ref.excluded[name]; !was {
			r.markIngressServers(name)
		}
	}
	for name := range r.ref.excluded {
		if _, still := excluded[name]; !still {
			r.markIngressServers(name)
		}
	}
	if !maps.Equal(services, r.ref.excludedServices) {
		r.servicesDirty = true
		mainFile = true
	}
	mainFile = mainFile || !maps.Equal(excluded, r.ref.excluded)
	settings = !maps.Equal(keys, r.ref.refusedKeys)
	r.ref.excluded, r.ref.refusedKeys, r.ref.excludedServices = excluded, keys, services
	return mainFile, settings
}

func (r *Renderer) markIngressServers(name string) {
	for _, key := range r.ref.ingServers[name] {
		r.dirty.servers[key] = true
	}
}

// effectiveSettings are the settings with every refused key at its default.
func (r *Renderer) effectiveSettings() bus.Settings {
	s := r.settings
	s.ProxyRealIPCIDR = slices.Clone(s.ProxyRealIPCIDR)
	for key := range r.ref.refusedKeys {
		failClosedSetting(&s, key)
	}
	return s
}

// visibleServer is s without the locations of the Ingresses left out; nil
// when none is left.
func (r *Renderer) visibleServer(s *bus.Server) *bus.Server {
	if len(r.ref.excluded) == 0 {
		return s
	}
	v := *s
	v.Locations = nil
	for _, l := range s.Locations {
		if _, out := r.ref.excluded[l.Ingress]; !out {
			v.Locations = append(v.Locations, l)
		}
	}
	if len(v.Locations) == 0 {
		return nil
	}
	return &v
}

// ingressSource is the attribution comment of an Ingress's lines in the
// file of the server under key.
func (r *Renderer) ingressSource(name, key string) string {
	if !r.ref.ingServers[name].Has(key) || !bus.SourceNamePattern.MatchString(name) {
		return sourceSwitchyard
	}
	rev := r.ingressRev(name, key)
	if !bus.RevPattern.MatchString(rev) {
		return sourceSwitchyard
	}
	return "# source " + bus.RefusedIngress + " " + name + " rev=" + rev
}

// zoneRev is the revision of an Ingress's rate limit zones, which its
// servers share: the zone ID, which hashes the Ingress and the limits.
func zoneRev(id string) string { return sourceRev([]byte("zone"), []byte(id)) }

// zoneSource attributes a rate limit zone to its Ingress.
func zoneSource(v zoneView) string {
	rev := zoneRev(v.ID)
	if !bus.SourceNamePattern.MatchString(v.Ingress) || !bus.RevPattern.MatchString(rev) {
		return sourceSwitchyard
	}
	return "# source " + bus.RefusedIngress + " " + v.Ingress + " rev=" + rev
}

// ingressHasRev says whether rev is the Ingress's current revision on one
// of its servers, or of its rate limit zones; refused Ingresses count, so a
// refusal holds while the Ingress is left out.
func (r *Renderer) ingressHasRev(name, rev string) bool {
	keyVar := r.effectiveSettings().LimitConnZoneVariable
	for _, key := range r.ref.ingServers[name] {
		if r.ingressRev(name, key) == rev {
			return true
		}
		for _, l := range r.servers[key].Locations {
			if l.Ingress == name {
				if id := zoneKeyID(locationRateLimitID(l), keyVar); id != "" && zoneRev(id) == rev {
					return true
				}
				if id := locationAuthUpstreamID(l); id != "" && zoneRev(id) == rev {
					return true
				}
			}
		}
	}
	return false
}

// sources is what the templates need to write attribution comments.
type sources struct {
	settings    *bus.Settings // as the ConfigMap has them, before fallbacks
	refusedKeys map[string]string
	ingress     func(name string) string
	// testRefuse names the Ingresses the hidden test option injects a
	// refused directive for.
	testRefuse map[string]bool
}

// configMapSource is the attribution comment of lines written from a
// ConfigMap key; a key at its default because of a refusal comes from
// Switchyard, so a refused default is never mistaken for the key's value.
func (s sources) configMapSource(key string) string {
	if s.settings == nil {
		return sourceSwitchyard
	}
	if _, refused := s.refusedKeys[key]; refused {
		return sourceSwitchyard
	}
	rev := settingRev(s.settings, key)
	if !bus.SourceNamePattern.MatchString(key) || !bus.RevPattern.MatchString(rev) {
		return sourceSwitchyard
	}
	return "# source " + bus.RefusedConfigMap + " " + key + " rev=" + rev
}

// refusedLines lists the refusals a render honours, for nginx.conf: the
// applier keeps a refusal while the configuration it runs lists it.
func (r *Renderer) refusedLines() []string {
	var lines []string
	for _, name := range slices.Sorted(maps.Keys(r.ref.excluded)) {
		if bus.SourceNamePattern.MatchString(name) && bus.RevPattern.MatchString(r.ref.excluded[name]) {
			lines = append(lines, "# refused "+bus.RefusedIngress+" "+name+" rev="+r.ref.excluded[name])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(r.ref.refusedKeys)) {
		if bus.SourceNamePattern.MatchString(key) && bus.RevPattern.MatchString(r.ref.refusedKeys[key]) {
			lines = append(lines, "# refused "+bus.RefusedConfigMap+" "+key+" rev="+r.ref.refusedKeys[key])
		}
	}
	for _, name := range slices.Sorted(maps.Keys(r.ref.excludedServices)) {
		if bus.SourceNamePattern.MatchString(name) && bus.RevPattern.MatchString(r.ref.excludedServices[name]) {
			lines = append(lines, "# refused "+bus.RefusedServices+" "+name+" rev="+r.ref.excludedServices[name])
		}
	}
	return lines
}
