package annotations

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
)

// Problem reasons the annotations stage reports.
const (
	ReasonInvalidAnnotation = "InvalidAnnotation"
	ReasonAnnotationRefused = "AnnotationRefused"
	ReasonPluginUnavailable = "PluginUnavailable"
	ReasonAnnotationWarning = "AnnotationWarning"
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
	serversOf map[string]map[string]bool
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
}

// ingressResult is what the plugins decided for one Ingress.
type ingressResult struct {
	features *bus.Features
	problems []bus.Problem
	rejected bool
}

// equal says whether r and o render the same locations. Balancing is left
// out: it goes to the backends (balancing.go), so a change of it alone
// must not re-render servers.
func (r *ingressResult) equal(o *ingressResult) bool {
	if r == nil || o == nil {
		return r == o
	}
	a, _ := json.Marshal(withoutBalancing(r.features))
	b, _ := json.Marshal(withoutBalancing(o.features))
	return r.rejected == o.rejected && string(a) == string(b) && slices.Equal(r.problems, o.problems)
}

// NewAnnotator returns an empty annotator.
func NewAnnotator(owners map[string]*ownedKey, prefix string, call callFunc) *Annotator {
	return &Annotator{
		owners: owners, prefix: prefix, call: call,
		servers: map[string]*bus.Server{}, ingresses: map[string]*bus.IngressInfo{},
		settings: bus.DefaultSettings(), results: map[string]*ingressResult{},
		serversOf: map[string]map[string]bool{}, failed: map[*hosted]map[string]bool{},
		backends: newBackendOverlay(),
		secrets:  map[string]map[string][]byte{},
	}
}

// Update applies the changed keys of the translator's table (a nil value
// is a delete) and returns what changes in the annotated table.
func (a *Annotator) Update(ctx context.Context, changed map[string][]byte) (bus.Output, error) {
	out := bus.Output{Puts: map[string][]byte{}}
	touchedServers := map[string]bool{}
	dirty := map[string]bool{}
	for key, data := range changed {
		if err := a.set(key, data, &out, touchedServers, dirty); err != nil {
			return bus.Output{}, err
		}
	}
	a.annotate(ctx, dirty, touchedServers, &out)
	if err := a.emitBackends(dirty, &out); err != nil {
		return bus.Output{}, err
	}
	return out, a.emit(touchedServers, dirty, &out)
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
	return out, a.emit(touched, dirty, &out)
}

// set records one changed key; keys the stage does not annotate pass
// through unchanged.
func (a *Annotator) set(key string, data []byte, out *bus.Output, touched, dirty map[string]bool) error {
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
		s := new(bus.Server)
		if err := json.Unmarshal(data, s); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
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
		info := new(bus.IngressInfo)
		if data != nil {
			if err := json.Unmarshal(data, info); err != nil {
				return fmt.Errorf("decode %s: %w", key, err)
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
			if settings.AnnotationsRiskLevel != a.settings.AnnotationsRiskLevel || settings.AllowSnippetAnnotations != a.settings.AllowSnippetAnnotations {
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
		if a.serversOf[loc.Ingress] == nil {
			a.serversOf[loc.Ingress] = map[string]bool{}
		}
		a.serversOf[loc.Ingress][serverKey] = true
	}
}

func (a *Annotator) unindex(serverKey string) {
	s := a.servers[serverKey]
	if s == nil {
		return
	}
	for _, loc := range s.Locations {
		delete(a.serversOf[loc.Ingress], serverKey)
		if len(a.serversOf[loc.Ingress]) == 0 {
			delete(a.serversOf, loc.Ingress)
		}
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
			for key := range a.serversOf[id] {
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

// split checks the Ingress's annotations the host can check itself
// (ownership, pattern, risk, snippets) and sorts the rest by plugin.
func (a *Annotator) split(info *bus.IngressInfo, res *ingressResult) map[*hosted]plugins.Ingress {
	byPlugin := map[*hosted]plugins.Ingress{}
	maxRisk, _ := plugins.ParseRisk(a.settings.AnnotationsRiskLevel)
	if maxRisk == 0 {
		maxRisk = plugins.RiskHigh
	}
	canary := info.Canary // the translator's decision
	for _, key := range slices.Sorted(maps.Keys(info.Annotations)) {
		value := info.Annotations[key]
		owner := a.owners[key]
		if canary && (owner == nil || (owner.plugin.desc.Name != canaryPlugin && owner.plugin.desc.Name != balancingPlugin)) {
			continue // a canary Ingress ignores its other annotations, as in ingress-nginx
		}
		if owner == nil {
			a.unowned(key, res)
			continue
		}
		if problem, ok := a.refuse(owner, key, value, maxRisk); ok {
			res.reject(problem)
			continue
		}
		p := owner.plugin
		in, ok := byPlugin[p]
		if !ok {
			in = plugins.Ingress{Namespace: info.Namespace, Name: info.Name, Annotations: map[string]string{}}
		}
		if _, set := in.Annotations[owner.spec.Key]; set && key != owner.full {
			continue // the canonical key wins over an alias
		}
		in.Annotations[owner.spec.Key] = value
		if owner.spec.SecretRef {
			// Only a Secret of the Ingress's own namespace is sent: the
			// plugin reports a value naming another one.
			if id, ok := bus.ParseSecretRef(info.Namespace, value); ok && strings.HasPrefix(id, info.Namespace+"/") {
				if data, ok := a.secrets[id]; ok {
					if in.Secrets == nil {
						in.Secrets = map[string]map[string][]byte{}
					}
					in.Secrets[id] = data
				}
			}
		}
		byPlugin[p] = in
	}
	return byPlugin
}

// refuse checks what the host checks for every annotation, before any
// plugin sees the value.
func (a *Annotator) refuse(owner *ownedKey, key, value string, maxRisk plugins.Risk) (bus.Problem, bool) {
	field := "metadata.annotations[" + key + "]"
	switch {
	case owner.spec.Risk > maxRisk:
		return bus.Problem{Field: field, Reason: ReasonAnnotationRefused, Message: fmt.Sprintf(
			"annotation %s has risk %s, above the controller's annotations-risk-level %s", key, owner.spec.Risk, maxRisk)}, true
	case isSnippet(key) && !a.settings.AllowSnippetAnnotations:
		return snippetRefused(key), true
	case strings.ContainsAny(value, "\r\n\x00"):
		return bus.Problem{Field: field, Reason: ReasonInvalidAnnotation, Message: fmt.Sprintf(
			"annotation %s: the value holds a line break or NUL", key)}, true
	case !owner.pattern.MatchString(value):
		return bus.Problem{Field: field, Reason: ReasonInvalidAnnotation, Message: fmt.Sprintf(
			"annotation %s: value %s does not match %s", key, quoteForMessage(value), owner.spec.Pattern)}, true
	}
	return bus.Problem{}, false
}

// unowned handles an annotation no plugin owns. Under our prefix a snippet
// is refused (never ignored: it may be what protects the Ingress); anything
// else is not ours to judge and is ignored, as ingress-nginx ignores
// annotations it does not know.
func (a *Annotator) unowned(key string, res *ingressResult) {
	if !strings.HasPrefix(key, a.prefix+"/") || !isSnippet(key) {
		return
	}
	if !a.settings.AllowSnippetAnnotations {
		res.reject(snippetRefused(key))
		return
	}
	res.reject(bus.Problem{Field: "metadata.annotations[" + key + "]", Reason: ReasonAnnotationRefused,
		Message: fmt.Sprintf("annotation %s: Switchyard does not render snippets; move the configuration to an annotation or a plugin", key)})
}

func isSnippet(key string) bool { return strings.HasSuffix(key, "-snippet") }

func snippetRefused(key string) bus.Problem {
	return bus.Problem{Field: "metadata.annotations[" + key + "]", Reason: ReasonAnnotationRefused,
		Message: fmt.Sprintf("annotation %s is a snippet, and snippet annotations are off (allow-snippet-annotations)", key)}
}

// quoteForMessage shows a value in an error message, cut short, so a long
// or hostile value cannot flood logs and Events.
func quoteForMessage(v string) string {
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	return fmt.Sprintf("%q", v)
}

func (r *ingressResult) reject(p bus.Problem) {
	r.rejected = true
	r.problems = append(r.problems, p)
}

// callAll sends each plugin its batch, all plugins at once, and folds the
// answers into results. A plugin that fails fails its Ingresses closed.
func (a *Annotator) callAll(ctx context.Context, batches map[*hosted][]plugins.Ingress, results map[string]*ingressResult) {
	type answer struct {
		p       *hosted
		results []plugins.Result
		err     error
	}
	answers := make(chan answer, len(batches))
	var wg sync.WaitGroup
	for p, batch := range batches {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := a.call(ctx, p, batch)
			answers <- answer{p, res, err}
		}()
	}
	wg.Wait()
	close(answers)
	for ans := range answers {
		if ans.err != nil {
			a.failClosed(ans.p, batches[ans.p], ans.err, results)
			continue
		}
		a.fold(ans.p, batches[ans.p], ans.results, results)
	}
}

func (a *Annotator) failClosed(p *hosted, batch []plugins.Ingress, err error, results map[string]*ingressResult) {
	if a.failed[p] == nil {
		a.failed[p] = map[string]bool{}
	}
	for _, in := range batch {
		id := in.Namespace + "/" + in.Name
		a.failed[p][id] = true
		res := results[id]
		res.features.Deny = &bus.Deny{Status: 503, Reason: "plugin " + p.desc.Name + " unavailable"}
		res.problems = append(res.problems, bus.Problem{Field: "metadata.annotations", Reason: ReasonPluginUnavailable,
			Message: fmt.Sprintf("plugin %s did not answer (%v); the Ingress answers 503 until it does", p.desc.Name, err)})
	}
}

// fold merges one plugin's results. An Ingress the plugin was asked about
// but did not answer fails closed like a failed call.
func (a *Annotator) fold(p *hosted, batch []plugins.Ingress, answers []plugins.Result, results map[string]*ingressResult) {
	asked := map[string]bool{}
	for _, in := range batch {
		asked[in.Namespace+"/"+in.Name] = true
	}
	for _, r := range answers {
		id := r.Namespace + "/" + r.Name
		if !asked[id] {
			continue
		}
		delete(asked, id)
		res := results[id]
		for _, e := range r.Errors {
			p := bus.Problem{Field: "metadata.annotations[" + a.displayKey(e.Key) + "]", Reason: ReasonInvalidAnnotation,
				Message: fmt.Sprintf("annotation %s: %s", a.displayKey(e.Key), e.Message)}
			if e.Warning {
				p.Reason = ReasonAnnotationWarning
				res.problems = append(res.problems, p)
			} else {
				res.reject(p)
			}
		}
		if err := mergeFeatures(res.features, &r.Features); err != nil {
			res.reject(bus.Problem{Field: "metadata.annotations", Reason: ReasonInvalidAnnotation, Message: err.Error()})
		}
	}
	for id := range asked {
		a.failClosed(p, []plugins.Ingress{{Namespace: strings.Split(id, "/")[0], Name: strings.Split(id, "/")[1]}},
			fmt.Errorf("no result for the Ingress"), results)
	}
}

func (a *Annotator) displayKey(key string) string {
	if strings.Contains(key, "/") {
		return key
	}
	return a.prefix + "/" + key
}

// emit writes the touched servers with their features and the dirty
// Ingresses' infos with the plugins' problems added.
func (a *Annotator) emit(touched, dirty map[string]bool, out *bus.Output) error {
	for key := range touched {
		s, ok := a.servers[key]
		if !ok {
			out.Deletes = append(out.Deletes, key)
			continue
		}
		data, err := json.Marshal(a.annotatedServer(s))
		if err != nil {
			return fmt.Errorf("encode %s: %w", key, err)
		}
		out.Puts[key] = data
	}
	for id := range dirty {
		namespace, name, _ := strings.Cut(id, "/")
		key := bus.Key(bus.KindIngress, namespace, name)
		info, ok := a.ingresses[id]
		if !ok {
			out.Deletes = append(out.Deletes, key)
			continue
		}
		data, err := json.Marshal(a.annotatedInfo(id, info))
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
