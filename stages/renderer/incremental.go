package renderer

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/parallel"
)

// Renderer keeps the model it rendered and the artifacts it produced, and
// renders again only what a change touches: one server file for a changed
// server, every file when the settings change.
type Renderer struct {
	cfg      Config
	settings bus.Settings
	servers  map[string]*bus.Server      // by model key
	certs    map[string]*bus.Certificate // by id "namespace/name"
	external map[string]string           // ExternalName backends: name → "host:port"
	// certHosts indexes which hosts name each certificate, so a changed
	// certificate does not scan every server.
	certHosts map[string]map[string]bool
	// serverAuth lists each server's htpasswd files, and authUsers the
	// servers using each file, so a file goes with its last user.
	serverAuth map[string][]string
	authUsers  map[string]map[string]bool
	// files are the paths of the files rendered. Their text goes out with
	// the change that rendered it and is not kept: the applier holds it,
	// and every file is rendered again when the settings change.
	files map[string]bool
	out   Artifacts // backends, certificates, routes and passthrough endpoints only
	dirty renderDirty
	// zones indexes the rate limit zones each server uses (zones.conf).
	zones zoneIndex
	// hosts maps each server's hostname to its model key: a
	// from-to-www-redirect server depends on its counterpart's absence.
	hosts map[string]string
	// sizes tracks the Lua payloads, and dicts the shared dict sizes
	// nginx.conf was last rendered with (dictsize.go).
	sizes payloadSizes
	dicts struct{ config, certs string }
	// ref is attribution and the applier's refusals (refusals.go).
	ref refusalState
	// passBackends indexes the passthrough servers by backend, and
	// streamDirty says StreamFile needs rendering (passthrough.go).
	passBackends map[string]map[string]bool
	streamDirty  bool
	// dhParamFile, ticketKeyFile, contextCertFile and contextKeyFile
	// are the ssl-dh-param and ssl-session-ticket-key files last
	// published, or "" (ticketkey.go).
	dhParamFile, ticketKeyFile, contextCertFile, contextKeyFile string
	sessionContext                                              sessionContextCache
	// streams are the TCP and UDP services, and servicesDirty says
	// ServicesFile needs rendering (streams.go).
	streams       *bus.StreamServices
	servicesDirty bool
	// modSecurity are the servers that run ModSecurity, by model key, and
	// mainModSecurity whether nginx.conf was rendered loading its module.
	modSecurity     map[string]bool
	mainModSecurity bool
	// routed maps the model key of each Lua-routed server to its host
	// (routes.go).
	routed map[string]string
	// catchAllTLS: the catch-all server has TLS settings of its own, and
	// no host is routed in Lua (routes.go).
	catchAllTLS bool
}

type renderDirty struct {
	main     bool            // nginx.conf and every server file
	mainFile bool            // nginx.conf alone
	servers  map[string]bool // model keys
	backends map[string]bool // backend names, put or deleted
	certs    map[string]bool // certificate ids
}

func newRenderDirty() renderDirty {
	return renderDirty{servers: map[string]bool{}, backends: map[string]bool{}, certs: map[string]bool{}}
}

// NewRenderer returns a renderer with nothing rendered yet.
func NewRenderer(cfg Config) *Renderer {
	r := &Renderer{
		cfg: cfg, settings: bus.DefaultSettings(),
		servers: map[string]*bus.Server{}, certs: map[string]*bus.Certificate{}, external: map[string]string{},
		certHosts: map[string]map[string]bool{}, hosts: map[string]string{},
		serverAuth: map[string][]string{}, authUsers: map[string]map[string]bool{},
		files: map[string]bool{},
		out:   Artifacts{Backends: map[string]*bus.Backend{}, Certificates: map[string]*LuaCertificate{}, Routes: map[string]*LuaRoute{}},
		dirty: newRenderDirty(),
		zones: newZoneIndex(),
		sizes: newPayloadSizes(),
		ref:   newRefusalState(),

		passBackends: map[string]map[string]bool{},
		modSecurity:  map[string]bool{},
		routed:       map[string]string{},
	}
	r.dirty.main = true
	return r
}

// Rendered says whether the file at path is part of the configuration.
func (r *Renderer) Rendered(path string) bool { return r.files[path] }

// SetServer adds, replaces (or with nil removes) the server under key.
func (r *Renderer) SetServer(key string, s *bus.Server) {
	if old := r.servers[key]; old != nil {
		r.indexCert(old, false)
		r.indexHost(old.Hostname, key, false)
		r.indexIngresses(key, old, false)
		r.indexPassthrough(key, old, false)
		if s == nil || old.Hostname != s.Hostname {
			delete(r.files, ServerFile(old.Hostname))
		}
	}
	if s == nil {
		delete(r.servers, key)
	} else {
		r.servers[key] = s
		r.indexCert(s, true)
		r.indexHost(s.Hostname, key, true)
		r.indexIngresses(key, s, true)
		r.indexPassthrough(key, s, true)
	}
	r.dirty.servers[key] = true
}

// indexCert adds or removes a server's host under its certificate and
// marks the certificate for a new payload.
func (r *Renderer) indexCert(s *bus.Server, add bool) {
	if s.TLS == nil || s.TLS.Certificate == "" {
		return
	}
	id := s.TLS.Certificate
	r.dirty.certs[id] = true
	if add {
		if r.certHosts[id] == nil {
			r.certHosts[id] = map[string]bool{}
		}
		r.certHosts[id][s.Hostname] = true
		return
	}
	delete(r.certHosts[id], s.Hostname)
	if len(r.certHosts[id]) == 0 {
		delete(r.certHosts, id)
	}
}

// SetBackend adds, replaces (or with nil removes) a backend.
func (r *Renderer) SetBackend(name string, b *bus.Backend) {
	old, had := r.out.Backends[name]
	if name == bus.DefaultBackendName && had != (b != nil) {
		r.dirty.main = true // custom error pages appear or go in every server
	}
	if target := externalTarget(b); target != externalTarget(old) {
		// ExternalName targets are written into the locations that use
		// them. They are rare, so every server is rendered again.
		r.dirty.main = true
		if target == "" {
			delete(r.external, name)
		} else {
			r.external[name] = target
		}
	}
	if b == nil {
		delete(r.out.Backends, name)
	} else {
		r.out.Backends[name] = b
	}
	r.dirty.backends[name] = true
	if len(r.passBackends[name]) > 0 {
		r.streamDirty = true // its endpoints are a passthrough host's
	}
}

// SetCertificate adds, replaces (or with nil removes) a certificate.
func (r *Renderer) SetCertificate(id string, c *bus.Certificate) {
	if c == nil {
		delete(r.certs, id)
	} else {
		r.certs[id] = c
	}
	r.dirty.certs[id] = true
}

// SetSettings replaces the controller settings; nil means the defaults.
func (r *Renderer) SetSettings(s *bus.Settings) {
	ocsp := r.settings.EnableOCSP
	r.settings = bus.DefaultSettings()
	if s != nil {
		r.settings = *s
	}
	if r.settings.EnableOCSP != ocsp {
		// enable-ocsp is carried on each certificate's payload.
		for id := range r.certs {
			r.dirty.certs[id] = true
		}
	}
	r.dirty.main = true
	r.ref.changed = true // a refused key may have a new value
}

// Flush renders what changed since the last Flush and returns it as the
// renderer's table change, values not yet encoded (the writer encodes each
// as it sends it). A server that fails a check is left out and reported;
// every other server is still rendered.
func (r *Renderer) Flush() (bus.Output, []error) {
	mainFile, settings := r.updateRefusals()
	r.dirty.mainFile = r.dirty.mainFile || mainFile
	r.dirty.main = r.dirty.main || settings
	d := r.dirty
	r.dirty = newRenderDirty()
	out := bus.Output{Puts: map[string][]byte{}, Values: map[string]any{}}
	var errs []error
	// The payloads first: their sizes decide nginx.conf's dict sizes.
	for name := range d.backends {
		r.flushBackend(name, &out, &errs)
	}
	for id := range d.certs {
		r.flushCertificate(id, &out)
	}
	resized, err := r.sizeDicts()
	if err != nil {
		return bus.Output{}, []error{fmt.Errorf("render %s: %w", MainFile, err)}
	}
	if d.main || d.mainFile || resized {
		if err := r.flushMain(&out); err != nil {
			return bus.Output{}, []error{err}
		}
	}
	if owns := r.catchAllOwnsTLS(); owns != r.catchAllTLS {
		// Every Lua-routed host moves to or from a server block.
		r.catchAllTLS = owns
		d.main = true
	}
	if d.main {
		// Server files depend on the settings too (redirects, HSTS, HTTP/2).
		for key := range r.servers {
			d.servers[key] = true
		}
	}
	errs = append(errs, r.renderServers(slices.Collect(maps.Keys(d.servers)), &out)...)
	// Routes are rendered with their servers: they may need larger dicts.
	if resized, err := r.sizeDicts(); err != nil {
		return bus.Output{}, []error{fmt.Errorf("render %s: %w", MainFile, err)}
	} else if resized {
		if err := r.flushMain(&out); err != nil {
			return bus.Output{}, []error{err}
		}
	}
	if r.loadModSecurity() != r.mainModSecurity {
		// The first or the last server with ModSecurity: nginx.conf loads
		// its module only while one runs it.
		if err := r.flushMain(&out); err != nil {
			return bus.Output{}, []error{err}
		}
	}
	r.flushStream(d.main || d.mainFile, &out, &errs)
	r.flushServices(d.main || d.mainFile, &out, &errs)
	if err := r.flushZones(&out); err != nil {
		errs = append(errs, fmt.Errorf("render %s: %w", ZonesFile, err))
	}
	slices.Sort(out.Deletes)
	return out, errs
}

// flushMain renders nginx.conf.
func (r *Renderer) flushMain(out *bus.Output) error {
	cfg := r.cfg
	cfg.ConfigDictSize, cfg.CertDictSize = r.dicts.config, r.dicts.certs
	cfg.loadModSecurity = r.loadModSecurity()
	settings := r.effectiveSettings()
	main, err := renderMain(cfg, settings, r.sources(""), r.refusedLines())
	if err != nil {
		return fmt.Errorf("render %s: %w", MainFile, err)
	}
	r.files[MainFile] = true
	r.mainModSecurity = cfg.loadModSecurity
	putFile(out, MainFile, main)
	r.flushSettingFiles(settings, out)
	return nil
}

// loadModSecurity says whether nginx.conf must load ModSecurity's module:
// the ConfigMap turns it on (a location may say "modsecurity off"), or a
// server runs it.
func (r *Renderer) loadModSecurity() bool {
	if r.cfg.ModSecurity.Unavailable != "" {
		return false
	}
	return r.effectiveSettings().EnableModSecurity || len(r.modSecurity) > 0
}

// sizeDicts grows the shared dicts to fit the payloads (never shrinking
// them) and reports whether a size changed.
func (r *Renderer) sizeDicts() (bool, error) {
	// Backends and routes share the config dict.
	config, err := dictSize(r.sizes.backendTotal+r.sizes.routeTotal, r.cfg.ConfigDictSize)
	if err != nil {
		return false, fmt.Errorf("config dict: %w", err)
	}
	certs, err := dictSize(r.sizes.certTotal, r.cfg.CertDictSize)
	if err != nil {
		return false, fmt.Errorf("certificate dict: %w", err)
	}
	config, certs = larger(config, r.dicts.config), larger(certs, r.dicts.certs)
	changed := config != r.dicts.config || certs != r.dicts.certs
	r.dicts.config, r.dicts.certs = config, certs
	return changed, nil
}

// larger returns the larger of two NGINX sizes; an empty one is the
// smallest.
func larger(a, b string) string {
	na, _ := bus.ParseSize(a)
	nb, _ := bus.ParseSize(b)
	if nb > na {
		return b
	}
	return a
}

// renderServers renders the servers under keys: each one's file or route
// is prepared on every CPU (the views and templates read the renderer's
// state and change nothing), then the results are taken in one at a time.
func (r *Renderer) renderServers(keys []string, out *bus.Output) []error {
	settings := r.effectiveSettings()
	prepared := make([]preparedServer, len(keys))
	parallel.For(len(keys), 64, func(i int) { prepared[i] = r.prepareServer(keys[i], settings) })
	var errs []error
	for i, key := range keys {
		if err := r.commitServer(key, prepared[i], settings, out); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// preparedServer is one server rendered, not yet taken in.
type preparedServer struct {
	// server is what is served of it (its refused Ingresses and left-out
	// paths taken away); nil when nothing is: deleted, or every Ingress
	// refused.
	server  *bus.Server
	deleted bool
	text    string
	route   *LuaRoute
	err     error
	leftOut []error
}

// prepareServer renders the server under key without changing the
// renderer: safe to call for many keys at once.
func (r *Renderer) prepareServer(key string, settings bus.Settings) preparedServer {
	s := r.servers[key]
	if s == nil {
		return preparedServer{deleted: true}
	}
	if s = r.visibleServer(s); s == nil {
		return preparedServer{}
	}
	s, leftOut := withoutForeignNested(s)
	s, closed := withoutModSecurity(r.cfg.ModSecurity, settings, s)
	p := preparedServer{server: s, leftOut: append(leftOut, closed...)}
	p.text, p.route, p.err = r.renderServerOrRoute(settings, s, key)
	return p
}

// commitServer takes a prepared server in: its file or route, zones,
// ModSecurity use and auth files.
func (r *Renderer) commitServer(key string, p preparedServer, settings bus.Settings, out *bus.Output) error {
	if p.deleted {
		// Its file went with it in SetServer.
		r.dropServer(key, "", out)
		return nil
	}
	path := ServerFile(r.servers[key].Hostname)
	if p.server == nil {
		// Every location's Ingress is refused: the host goes to the
		// catch-all server until one changes.
		r.dropServer(key, path, out)
		return nil
	}
	s := p.server
	if p.err != nil {
		r.dropServer(key, path, out)
		return fmt.Errorf("render server %s: %w", s.Hostname, p.err)
	}
	r.zones.set(key, serverZones(s, settings))
	if r.cfg.ModSecurity.Unavailable == "" && usesModSecurity(s, settings) {
		r.modSecurity[key] = true
	} else {
		delete(r.modSecurity, key)
	}
	if p.route != nil {
		// Served by the catch-all server from now on.
		if r.files[path] {
			delete(r.files, path)
			out.Deletes = append(out.Deletes, fileKey(path))
		}
		r.putRoute(key, p.route, out)
	} else {
		r.dropRoute(key, out)
		r.files[path] = true
		putFile(out, path, p.text)
	}
	r.setAuthFiles(key, authFiles(s), out)
	return errors.Join(p.leftOut...)
}

// dropServer takes away everything the server under key had rendered: its
// route, zones and auth files, and its file at path ("" when SetServer
// already removed it).
func (r *Renderer) dropServer(key, path string, out *bus.Output) {
	r.dropRoute(key, out)
	r.zones.set(key, nil)
	delete(r.modSecurity, key)
	if path == "" {
		path = ServerFile(hostFromKey(key))
	} else {
		delete(r.files, path)
	}
	out.Deletes = append(out.Deletes, fileKey(path))
	r.setAuthFiles(key, nil, out)
}

// renderServerOrRoute renders s as a server block, or, when
// dynamicServer allows, as the route of a Lua-routed host.
func (r *Renderer) renderServerOrRoute(settings bus.Settings, s *bus.Server, key string) (string, *LuaRoute, error) {
	view, err := newServerView(r.cfg, settings, s, r.backendContext(), r.sources(key))
	if err != nil {
		return "", nil, err
	}
	if ok, _ := dynamicServer(r.cfg, settings, view, s); ok && !r.coveredByWildcard(s.Hostname) && !r.catchAllTLS {
		if route := newLuaRoute(settings, s, view); route.size() <= maxRouteBytes {
			return "", route, nil
		}
		// Too large for one bus message: a server file can be split.
	}
	text, err := execute("server.conf.tmpl", view)
	return text, nil, err
}

// sources attributes the lines of the server under key (none: nginx.conf).
func (r *Renderer) sources(key string) sources {
	src := sources{settings: &r.settings, refusedKeys: r.ref.refusedKeys, testRefuse: r.cfg.testRefuse()}
	if key != "" {
		memo := map[string]string{}
		src.ingress = func(name string) string {
			if c, ok := memo[name]; ok {
				return c
			}
			memo[name] = r.ingressSource(name, key)
			return memo[name]
		}
	}
	return src
}

func (r *Renderer) backendContext() backendContext {
	_, hasDefault := r.out.Backends[bus.DefaultBackendName]
	return backendContext{hasDefault: hasDefault, external: r.external, hostExists: r.hostExists}
}

func externalTarget(b *bus.Backend) string {
	if b == nil || b.ExternalName == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d", b.ExternalName, b.ExternalPort)
}

func (r *Renderer) flushBackend(name string, out *bus.Output, errs *[]error) {
	key := bus.Key(bus.KindBackend, name)
	b, ok := r.out.Backends[name]
	if ok && !backendNamePattern.MatchString(b.Name) {
		delete(r.out.Backends, name)
		*errs = append(*errs, fmt.Errorf("render backend %q: invalid name", b.Name))
		ok = false
	}
	if ok {
		if err := checkCanaryFields(b); err != nil {
			// The backend is still served, without its canary.
			*errs = append(*errs, fmt.Errorf("render backend %q: %w; served without its canary", b.Name, err))
			plain := *b
			plain.AlternativeBackends, plain.TrafficShapingPolicy, plain.CanaryPolicies = nil, nil, nil
			b = &plain
			r.out.Backends[name] = b
		}
	}
	if !ok {
		setSize(r.sizes.backends, &r.sizes.backendTotal, name, 0)
		out.Deletes = append(out.Deletes, key)
		return
	}
	if err := b.Validate(); err != nil {
		// The annotations stage should have rejected these settings; the
		// backend still serves, round robin, rather than 503.
		*errs = append(*errs, fmt.Errorf("render backend %q: balancing settings ignored: %w", b.Name, err))
		b = withoutBalancing(b)
		r.out.Backends[name] = b
	}
	// Everything else goes to Lua as it is: the balancer reads the
	// balancing settings in ingress-nginx's JSON shape.
	// Encoded here rather than by the writer: the size sets the dict size.
	data, _ := json.Marshal(b)
	setSize(r.sizes.backends, &r.sizes.backendTotal, name, len(data))
	out.Puts[key] = data
}

// flushCertificate re-derives one certificate's payload: its PEM and the
// hosts whose server names it.
func (r *Renderer) flushCertificate(id string, out *bus.Output) {
	ns, name, _ := strings.Cut(id, "/")
	key := bus.Key(bus.KindCertificate, ns, name)
	hosts := slices.Sorted(maps.Keys(r.certHosts[id]))
	cert := r.certs[id]
	if cert == nil || (len(hosts) == 0 && !cert.Default) {
		delete(r.out.Certificates, id)
		setSize(r.sizes.certs, &r.sizes.certTotal, id, 0)
		out.Deletes = append(out.Deletes, key)
		return
	}
	lc := &LuaCertificate{PEM: cert.PEM, Hosts: hosts, Default: cert.Default, OCSP: r.settings.EnableOCSP}
	r.out.Certificates[id] = lc
	data, _ := json.Marshal(lc)
	size := len(data)
	if lc.OCSP {
		size += ocspStapleAllowance
	}
	setSize(r.sizes.certs, &r.sizes.certTotal, id, size)
	out.Puts[key] = data
}

// ocspStapleAllowance is the room an OCSP response takes next to its
// certificate in the certificates dict (base64 in the post, DER in the
// dict): responses are 1-3 KiB, more with a delegated responder's
// certificate.
const ocspStapleAllowance = 4096

func fileKey(path string) string { return bus.Key(bus.KindFile, path) }

func putFile(out *bus.Output, path, content string) {
	out.Values[fileKey(path)] = bus.RenderedFile{Path: path, Content: content}
}

// hostFromKey reads the hostname back from a server's model key.
func hostFromKey(key string) string {
	_, parts, err := bus.SplitKey(key)
	if err != nil || len(parts) == 0 {
		return key
	}
	return parts[0]
}

// Update applies a change of the annotated model, the keys deleted and
// the keys put with their values, and flushes. Deletes go first, so a
// server file removed under one key cannot take a new one with it. It
// empties puts as it goes, so that each value can be collected once
// decoded: the first change is the whole model.
func (r *Renderer) Update(puts map[string][]byte, deletes []string) (bus.Output, []error) {
	var errs []error
	for _, key := range deletes {
		if err := r.applyEntry(key, nil); err != nil {
			errs = append(errs, err)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(puts)) {
		if err := r.applyEntry(key, puts[key]); err != nil {
			errs = append(errs, err)
		}
		delete(puts, key)
	}
	out, flushErrs := r.Flush()
	return out, append(errs, flushErrs...)
}

func (r *Renderer) applyEntry(key string, data []byte) error {
	kind, parts, err := bus.SplitKey(key)
	if err != nil {
		return err
	}
	gone := data == nil
	switch kind {
	case bus.KindServer:
		var s *bus.Server
		if !gone {
			if s, err = decode[bus.Server](key, data); err != nil {
				return err
			}
		}
		r.SetServer(key, s)
	case bus.KindBackend:
		var b *bus.Backend
		if !gone {
			if b, err = decode[bus.Backend](key, data); err != nil {
				return err
			}
		}
		r.SetBackend(parts[0], b)
	case bus.KindCertificate:
		var c *bus.Certificate
		if !gone {
			if c, err = decode[bus.Certificate](key, data); err != nil {
				return err
			}
		}
		if len(parts) == 2 {
			r.SetCertificate(parts[0]+"/"+parts[1], c)
		}
	case bus.KindConfig:
		var s *bus.Settings
		if !gone {
			if s, err = decode[bus.Settings](key, data); err != nil {
				return err
			}
		}
		r.SetSettings(s)
	case bus.KindStream:
		var s *bus.StreamServices
		if !gone {
			if s, err = decode[bus.StreamServices](key, data); err != nil {
				return err
			}
		}
		r.SetStreams(s)
	}
	return nil
}

func decode[T any](key string, data []byte) (*T, error) {
	v := new(T)
	if err := json.Unmarshal(data, v); err != nil {
		return nil, fmt.Errorf("decode %s: %w", key, err)
	}
	return v, nil
}

// checkCanaryFields checks a backend's canary fields again: they go to the
// Lua balancer only, but the same rule holds for every plugin output.
func checkCanaryFields(b *bus.Backend) error {
	for _, alt := range b.AlternativeBackends {
		if !backendNamePattern.MatchString(alt) {
			return fmt.Errorf("invalid alternative backend name %q", alt)
		}
	}
	for ingress, p := range b.CanaryPolicies {
		if !ingressIDPattern.MatchString(ingress) {
			return fmt.Errorf("invalid canary Ingress %q", ingress)
		}
		if err := (&bus.Features{Canary: p}).Validate(); err != nil {
			return fmt.Errorf("canary policy of %s: %w", ingress, err)
		}
	}
	return (&bus.Features{Canary: b.TrafficShapingPolicy}).Validate()
}

// ingressIDPattern is "namespace/name" of Kubernetes names.
var ingressIDPattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

// withoutBalancing returns a copy of b that balances round robin: what the
// renderer publishes when b's balancing settings are invalid, so the
// backend keeps serving.
func withoutBalancing(b *bus.Backend) *bus.Backend {
	c := *b
	c.LoadBalance = ""
	c.UpstreamHashByConfig = nil
	c.SessionAffinityConfig = nil
	return &c
}
