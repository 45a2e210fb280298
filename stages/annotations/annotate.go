package annotations

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/internal/compact"
	"switchyard.dev/switchyard/plugins"
)

// Problem reasons the annotations stage reports.
const (
	ReasonInvalidAnnotation = "InvalidAnnotation"
	ReasonAnnotationRefused = "AnnotationRefused"
	ReasonPluginUnavailable = "PluginUnavailable"
	ReasonAnnotationWarning = "AnnotationWarning"
	// ReasonAnnotationNotSupported is a warning: one of ingress-nginx's
	// annotations that Switchyard ignores; the Ingress is served without it.
	ReasonAnnotationNotSupported = "AnnotationNotSupported"
	// ReasonUnknownAnnotation is a warning: a name under the prefix that
	// neither ingress-nginx nor any plugin knows, most often a typo.
	ReasonUnknownAnnotation = "UnknownAnnotation"
)

// callFunc sends one batch to one plugin.
type callFunc func(ctx context.Context, p *hosted, batch []plugins.Ingress) ([]plugins.Result, error)

// Annotator keeps the translator's model and what the plugins made of each
// Ingress, and turns a change of the model into a change of the annotated
// model. Only the Ingresses a change touches are sent to the plugins.
type Annotator struct {
	owners map[string]*ownedKey // full annotation key → owner
	prefix string
	call   callFunc

	servers   map[string]*bus.Server      // by table key, as translated
	ingresses map[string]*bus.IngressInfo // by "namespace/name", as translated
	settings  bus.Settings
	results   map[string]*ingressResult // by "namespace/name"
	// serversOf indexes which servers hold a location of each Ingress.
	serversOf map[string]compact.Set
	// failed holds, per plugin, the Ingresses that failed closed because
	// the plugin did not answer; they are applied again when it is back.
	failed map[*hosted]map[string]bool
	// backends is the backend overlay: canary and balancing fields added
	// to the translated backends (backends.go).
	backends *backendOverlay
	// secrets holds the Secrets annotations name (translator kind
	// secret), by "namespace/name", for the plugins' SecretRef keys. They
	// stop here: the renderer never sees them.
	secrets map[string]map[string][]byte
	// passthrough is --enable-ssl-passthrough: without it ssl-passthrough
	// is a warning and has no effect.
	passthrough bool
	// matched remembers values that matched a key's pattern (matches).
	matched map[*ownedKey]map[string]struct{}
	// keyBuf is split's list of an Ingress's keys, reused.
	keyBuf []string
}

// ingressResult is what the plugins decided for one Ingress.
type ingressResult struct {
	features *bus.Features
	problems []bus.Problem
	rejected bool
}

// equal says whether r and o render the same locations. Balancing is left
// out: it goes to the backends (balancing.go), so a change of it alone
// must not re-render servers. DeepEqual, not a comparison of the JSON:
// equal values encode alike, and it costs no encoding (two per Ingress,
// at 10,000 Ingresses a tenth of the stage's time). It may call a nil and
// an empty list different, which only re-renders a server.
func (r *ingressResult) equal(o *ingressResult) bool {
	if r == nil || o == nil {
		return r == o
	}
	return r.rejected == o.rejected && slices.Equal(r.problems, o.problems) &&
		reflect.DeepEqual(withoutBalancing(r.features), withoutBalancing(o.features))
}

// NewAnnotator returns an empty annotator.
func NewAnnotator(owners map[string]*ownedKey, prefix string, call callFunc) *Annotator {
	return &Annotator{
		owners: owners, prefix: prefix, call: call,
		servers: map[string]*bus.Server{}, ingresses: map[string]*bus.IngressInfo{},
		settings: bus.DefaultSettings(), results: map[string]*ingressResult{},
		serversOf: map[string]compact.Set{}, failed: map[*hosted]map[string]bool{},
		backends: newBackendOverlay(),
		secrets:  map[string]map[string][]byte{},
		matched:  map[*ownedKey]map[string]struct{}{},
	}
}

// Update applies the changed keys of the translator's table (a nil value
// is a delete) and returns what changes in the annotated table.
func (a *Annotator) Update(ctx context.Context, changed map[string][]byte) (bus.Output, error) {
	// Sized for the change: at a start, 10,000 Ingresses are 30,000 keys,
	// and maps grown one rehash at a time cost more than filling them.
	out := bus.Output{Puts: make(map[string][]byte, len(changed))}
	touchedServers := make(map[string]bool, len(changed)/3)
	dirty := make(map[string]bool, len(changed)/3)
	decoded, err := predecode(changed)
	if err != nil {
		return bus.Output{}, err
	}
	for key, data := range changed {
		if err := a.set(key, data, decoded[key], &out, touchedServers, dirty); err != nil {
			return bus.Output{}, err
		}
	}
	a.annotate(ctx, dirty, touchedServers, &out)
	if err := a.emitBackends(dirty, &out); err != nil {
		return bus.Output{}, err
	}
	return out, a.emit(touchedServers, dirty, changed, &out)
}

// Retry applies again the Ingresses that failed closed while plugin name
// was down.
func (a *Annotator) Retry(ctx context.Context, name string) (bus.Output, error) {
	dirty := map[string]bool{}
	for p, ids := range a.failed {
		if p.desc.Name == name {
			maps.Copy(dirty, ids)
		}
	}
	out := bus.Output{Puts: map[string][]byte{}}
	touched := map[string]bool{}
	a.annotate(ctx, dirty, touched, &out)
	if err := a.emitBackends(dirty, &out); err != nil {
		return bus.Output{}, err
	}
	return out, a.emit(touched, dirty, nil, &out)
}

// set records one changed key; keys the stage does not annotate pass
// through unchanged. decoded is data already decoded (predecode), for a
// server or an Ingress info.
func (a *Annotator) set(key string, data []byte, decoded any, out *bus.Output, touched, dirty map[string]bool) error {
	kind, parts, err := bus.SplitKey(key)
	if err != nil {
		return err
	}
	switch kind {
	case bus.KindServer:
		touched[key] = true
		a.unindex(key)
		if data == nil {
			delete(a.servers, key)
			a.backends.setServer(key, nil)
			return nil
		}
		s, ok := decoded.(*bus.Server)
		if !ok {
			return fmt.Errorf("server %s was not decoded", key)
		}
		a.servers[key] = s
		a.index(key)
		a.backends.setServer(key, s)
	case bus.KindBackend:
		// Backends pass through the overlay (backends.go).
		if len(parts) != 1 {
			return fmt.Errorf("backend key %q: want one name", key)
		}
		a.backends.setBackend(parts[0], data)
	case bus.KindIngress:
		if data != nil {
			info, ok := decoded.(*bus.IngressInfo)
			if !ok {
				return fmt.Errorf("ingress info %s was not decoded", key)
			}
			a.ingresses[info.Namespace+"/"+info.Name] = info
			dirty[info.Namespace+"/"+info.Name] = true
		} else if id, ok := ingressID(key); ok {
			delete(a.ingresses, id)
			dirty[id] = true
		}
	case bus.KindSecret:
		if len(parts) != 2 {
			return fmt.Errorf("key %q: want secret.<namespace>.<name>", key)
		}
		id := parts[0] + "/" + parts[1]
		if data == nil {
			delete(a.secrets, id)
		} else {
			var secret bus.Secret
			if err := json.Unmarshal(data, &secret); err != nil {
				// json errors quote no input: the data cannot leak here.
				return fmt.Errorf("decode %s: %w", key, err)
			}
			a.secrets[id] = secret.Data
		}
		a.markSecretUsers(id, dirty)
	case bus.KindConfig:
		if data != nil {
			settings := bus.DefaultSettings()
			if err := json.Unmarshal(data, &settings); err != nil {
				return fmt.Errorf("decode %s: %w", key, err)
			}
			if settings.AnnotationsRiskLevel != a.settings.AnnotationsRiskLevel || settings.AllowSnippetAnnotations != a.settings.AllowSnippetAnnotations ||
				settings.AllowCrossNamespaceResources != a.settings.AllowCrossNamespaceResources ||
				!slices.Equal(settings.AnnotationValueWordBlocklist, a.settings.AnnotationValueWordBlocklist) {
				for id := range a.ingresses {
					dirty[id] = true
				}
			}
			if settings.LoadBalance != a.settings.LoadBalance {
				a.backends.touchAll() // the default of every backend changed
			}
			a.settings = settings
		}
		passThrough(key, data, out)
	default:
		passThrough(key, data, out)
	}
	return nil
}

// markSecretUsers marks the Ingresses whose SecretRef annotations name the
// Secret id. Secrets change rarely, so a scan beats keeping an index.
func (a *Annotator) markSecretUsers(id string, dirty map[string]bool) {
	for ingID, info := range a.ingresses {
		for key, value := range info.Annotations {
			if owner := a.owners[key]; owner != nil && owner.spec.SecretRef {
				if ref, ok := bus.ParseSecretRef(info.Namespace, value); ok && ref == id {
					dirty[ingID] = true
				}
			}
		}
	}
}

func passThrough(key string, data []byte, out *bus.Output) {
	if data == nil {
		out.Deletes = append(out.Deletes, key)
		return
	}
	out.Puts[key] = data
}

func ingressID(key string) (string, bool) {
	_, parts, err := bus.SplitKey(key)
	if err != nil || len(parts) != 2 {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}

func (a *Annotator) index(serverKey string) {
	for _, loc := range a.servers[serverKey].Locations {
		if loc.Ingress == "" {
			continue
		}
		compact.Update(a.serversOf, loc.Ingress, serverKey, true)
	}
}

func (a *Annotator) unindex(serverKey string) {
	s := a.servers[serverKey]
	if s == nil {
		return
	}
	for _, loc := range s.Locations {
		compact.Update(a.serversOf, loc.Ingress, serverKey, false)
	}
}

// annotate runs the plugins for the dirty Ingresses and marks the servers
// whose result changed.
func (a *Annotator) annotate(ctx context.Context, dirty, touched map[string]bool, out *bus.Output) {
	if len(dirty) == 0 {
		return
	}
	results := map[string]*ingressResult{}
	batches := map[*hosted][]plugins.Ingress{}
	for _, id := range slices.Sorted(maps.Keys(dirty)) {
		info := a.ingresses[id]
		if info == nil {
			continue
		}
		res := &ingressResult{features: &bus.Features{}}
		results[id] = res
		if info.Rejected {
			continue
		}
		for p, in := range a.split(info, res) {
			batches[p] = append(batches[p], in)
		}
	}
	for p := range a.failed {
		for id := range dirty {
			delete(a.failed[p], id)
		}
	}
	a.callAll(ctx, batches, results)
	for id := range dirty {
		res := results[id]
		if info := a.ingresses[id]; res != nil && info != nil && !info.Rejected && !res.rejected && !info.Canary {
			// custom-headers, read by the translator (plugins/builtin/headers).
			res.features.ResponseHeaders = append(slices.Clone(info.CustomHeaders), res.features.ResponseHeaders...)
			a.addFastCGIParams(info, res)
			addAuthProxySetHeaders(info, res)
			a.checkAliases(res)
			a.checkPassthrough(id, res)
		}
		if res != nil {
			if err := res.features.Validate(); err != nil {
				res.reject(bus.Problem{Field: "metadata.annotations", Reason: ReasonInvalidAnnotation,
					Message: "a plugin returned features the host refuses: " + err.Error()})
			}
			if res.features.IsZero() {
				res.features = nil
			}
		}
		if !res.equal(a.results[id]) {
			for _, key := range a.serversOf[id] {
				touched[key] = true
			}
		}
		if res == nil {
			delete(a.results, id)
		} else {
			a.results[id] = res
		}
	}
}

func (r *ingressResult) reject(p bus.Problem) {
	r.rejected = true
	r.problems = append(r.problems, p)
}

// addFastCGIParams gives fastcgi-params-configmap's parameters, read by
// the translator, to an FCGI backend (plugins/builtin/upstream warns when
// the backend is not one).
func (a *Annotator) addFastCGIParams(info *bus.IngressInfo, res *ingressResult) {
	u := res.features.Upstream
	if len(info.FastCGIParams) == 0 || u == nil || u.Protocol != features.ProtocolFCGI {
		return
	}
	withParams := *u
	withParams.FastCGIParams = slices.Clone(info.FastCGIParams)
	res.features.Upstream = &withParams
}

// addAuthProxySetHeaders gives auth-proxy-set-headers' headers, read by
// the translator, to the Ingress's external auth (plugins/builtin/auth
// warns when there is none). When the translator could not use the
// ConfigMap, external auth is denied (503): it must not run without the
// headers the auth service was promised, nor be skipped.
func addAuthProxySetHeaders(info *bus.IngressInfo, res *ingressResult) {
	auth := res.features.Auth
	if auth == nil || auth.External == nil {
		return
	}
	if info.AuthProxySetHeadersUnusable != "" {
		res.features.Deny = &features.Deny{Status: 503, Reason: info.AuthProxySetHeadersUnusable}
		return
	}
	if len(info.AuthProxySetHeaders) == 0 {
		return
	}
	external := *auth.External
	external.ProxySetHeaders = slices.Clone(info.AuthProxySetHeaders)
	res.features.Auth = &features.Auth{Basic: auth.Basic, External: &external}
}
