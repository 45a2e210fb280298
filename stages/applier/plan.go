package applier

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// desiredState is what the renderer asks for, split into the static part (files,
// a change reloads NGINX) and the dynamic part (Lua payloads and the TLS
// passthrough endpoint files, never reload).
type desiredState struct {
	Files        map[string]string          // path below conf/ → content
	Backends     namedValues                // backend name → JSON
	Certificates map[string]luaCertificate  // "namespace/name" → PEM and hosts
	Routes       map[string]json.RawMessage // Lua-routed host → its route
	Passthrough  map[string]string          // TLS passthrough host → its endpoints file
}

type luaCertificate struct {
	PEM     string   `json:"pem"`
	Hosts   []string `json:"hosts"`
	Default bool     `json:"default,omitempty"`
	OCSP    bool     `json:"ocsp,omitempty"` // enable-ocsp: staple (ocsp.go)
}

// applyPlan says what one apply does.
type applyPlan struct {
	WriteConfig      bool // test, swap and (re)load the files
	PushBackends     bool
	PushCertificates bool
}

// decide compares what runs with what is desired. Backends and
// certificates are left out of the static comparison: ingress-nginx reloads
// for far less, and every avoided reload is a worker generation not drained.
// A freshly started NGINX has empty shared dictionaries, so everything is
// pushed to it.
func decide(running *desiredState, next desiredState, freshNginx bool) applyPlan {
	if running == nil {
		return applyPlan{WriteConfig: true, PushBackends: true, PushCertificates: true}
	}
	return applyPlan{
		WriteConfig:      !maps.Equal(running.Files, next.Files),
		PushBackends:     freshNginx || !namedEqual(&running.Backends, &next.Backends),
		PushCertificates: freshNginx || !maps.EqualFunc(running.Certificates, next.Certificates, certEqual),
	}
}

func jsonEqual(a, b json.RawMessage) bool { return string(a) == string(b) }

func certEqual(a, b luaCertificate) bool {
	if a.PEM != b.PEM || a.OCSP != b.OCSP || len(a.Hosts) != len(b.Hosts) {
		return false
	}
	for i := range a.Hosts {
		if a.Hosts[i] != b.Hosts[i] {
			return false
		}
	}
	return true
}

func newDesired() desiredState {
	return desiredState{Files: map[string]string{}, Certificates: map[string]luaCertificate{},
		Routes: map[string]json.RawMessage{}, Passthrough: map[string]string{}}
}

// desiredTable is the applier's decoded copy of the renderer's table. The
// bus passes only what changed, so the whole state is kept here. A value
// this stage cannot decode is set aside until the renderer replaces or
// deletes it; until then the table is not understood and is not applied.
type desiredTable struct {
	desired desiredState
	broken  map[string]error // key → why its value was not understood
	// parts joins the files the renderer split across keys.
	parts *bus.FileAssembler
	// localize fills this data plane's addresses and sockets into a file
	// (nginx.Local.Localize), once, as it arrives.
	localize func(string) string
	// shared are the kinds whose map in desired the last state handed
	// out (snapshot) holds too: update copies such a map before its
	// first write, so a change copies only the maps it touches.
	shared map[string]bool
	// sharedBackends are the same for the backends' shards: a write
	// copies its shard only (namedValues).
	sharedBackends [namedShards]bool
}

// snapshot is the desired state for the apply loop, which keeps it while
// the next one is built: its maps are shared until update writes them.
func (t *desiredTable) snapshot() desiredState {
	t.shared = map[string]bool{bus.KindFile: true, bus.KindCertificate: true, bus.KindRoute: true, bus.KindPassthrough: true}
	for i := range t.sharedBackends {
		t.sharedBackends[i] = true
	}
	return t.desired
}

// own makes desired's map for the kind of key its own before a write.
func (t *desiredTable) own(key string) {
	kind, _, _ := strings.Cut(key, ".")
	if kind == bus.KindBackend {
		if _, parts, err := bus.SplitKey(key); err == nil && len(parts) == 1 {
			if i := shardOf(parts[0]); t.sharedBackends[i] {
				t.desired.Backends.own(parts[0])
				t.sharedBackends[i] = false
			}
		}
		return
	}
	if !t.shared[kind] {
		return
	}
	delete(t.shared, kind)
	d := &t.desired
	switch kind {
	case bus.KindFile:
		d.Files = maps.Clone(d.Files)
	case bus.KindCertificate:
		d.Certificates = maps.Clone(d.Certificates)
	case bus.KindRoute:
		d.Routes = maps.Clone(d.Routes)
	case bus.KindPassthrough:
		d.Passthrough = maps.Clone(d.Passthrough)
	}
}

func newDesiredTable(localize func(string) string) *desiredTable {
	return &desiredTable{desired: newDesired(), broken: map[string]error{}, parts: bus.NewFileAssembler(), localize: localize}
}

// update applies a snapshot of the renderer's table, decoding only the
// keys it puts. It returns why the table is not understood, or nil.
func (t *desiredTable) update(snap bus.Snapshot) error {
	if snap.Full {
		t.desired, t.broken, t.parts, t.shared = newDesired(), map[string]error{}, bus.NewFileAssembler(), nil
		t.sharedBackends = [namedShards]bool{}
	}
	for _, key := range snap.Deletes {
		// A deleted key that does not parse was never in the desired
		// state: forgetting it is all there is to do.
		if isPart, _ := t.parts.Update(key, nil, false); !isPart {
			t.own(key)
			_ = t.desired.updateKey(key, nil, false, t.localize)
		}
		delete(t.broken, key)
	}
	for key, data := range snap.Puts {
		isPart, err := t.parts.Update(key, data, true)
		if err == nil && !isPart {
			t.own(key)
			err = t.desired.updateKey(key, data, true, t.localize)
		}
		if err != nil {
			t.broken[key] = err
		} else {
			delete(t.broken, key)
		}
		// Let each message go once decoded: the first snapshot is the
		// whole table.
		delete(snap.Puts, key)
	}
	// A split file is whole only with all its parts; until then the table
	// is not understood, and the running state stays.
	t.parts.Assemble(func(path, content string, err error) {
		key := bus.Key(bus.KindFile, path)
		if err != nil {
			t.broken[key] = err
			return
		}
		delete(t.broken, key)
		t.own(key)
		t.desired.Files[path] = t.localize(content)
	})
	var errs []error
	for _, key := range slices.Sorted(maps.Keys(t.broken)) {
		errs = append(errs, t.broken[key])
	}
	return errors.Join(errs...)
}

func (d *desiredState) updateKey(key string, data []byte, present bool, localize func(string) string) error {
	kind, parts, err := bus.SplitKey(key)
	if err != nil {
		return err
	}
	switch {
	case kind == bus.KindFile && len(parts) == 1:
		var f bus.RenderedFile
		if !present {
			delete(d.Files, parts[0])
		} else if err := json.Unmarshal(data, &f); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		} else {
			d.Files[parts[0]] = localize(f.Content)
		}
	case kind == bus.KindBackend && len(parts) == 1:
		if !present {
			d.Backends.remove(parts[0])
		} else {
			d.Backends.set(parts[0], json.RawMessage(data))
		}
	case kind == bus.KindRoute && len(parts) == 1:
		if !present {
			delete(d.Routes, parts[0])
		} else {
			d.Routes[parts[0]] = json.RawMessage(data)
		}
	case kind == bus.KindPassthrough && len(parts) == 1:
		if !present {
			delete(d.Passthrough, parts[0])
		} else if content, err := decodePassthrough(parts[0], data); err != nil {
			return err
		} else {
			d.Passthrough[parts[0]] = content
		}
	case kind == bus.KindCertificate && len(parts) == 2:
		id := parts[0] + "/" + parts[1]
		var c luaCertificate
		if !present {
			delete(d.Certificates, id)
		} else if err := json.Unmarshal(data, &c); err != nil {
			return fmt.Errorf("decode %s: %w", key, err)
		} else {
			d.Certificates[id] = c
		}
	default:
		return fmt.Errorf("renderer key %q: unknown kind %q", key, kind)
	}
	return nil
}

// backendsPayload is the body of POST /configuration/backends.
func (d desiredState) backendsPayload() []byte {
	return namedBody(d.Backends.sortedNames(), d.Backends.value)
}

// backendsDelta is the body of POST /configuration/backends/delta.
func (d desiredState) backendsDelta(running *namedValues, base uint64) []byte {
	changed, removed := namedChanges(&d.Backends, running)
	return deltaBody(backendsKind.field, changed, removed, d.Backends.value, base)
}

// namedPayload is the body of a full post: every value, sorted by key so
// equal states give equal bodies.
func namedPayload(values map[string]json.RawMessage) []byte {
	return namedBody(slices.Sorted(maps.Keys(values)), func(name string) json.RawMessage { return values[name] })
}

// namedBody is a full post's body: the values of names, in that order.
func namedBody(names []string, value func(string) json.RawMessage) []byte {
	buf := []byte{'['}
	for i, n := range names {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, value(n)...)
	}
	return append(buf, ']')
}

// namedDelta is the body of a delta post: the values of next that are new
// or differ from running under field, and the keys of running's that next
// no longer has, on top of the stored version base. Sorted by key, so
// equal changes give equal bodies; nil when nothing changed.
func namedDelta(field string, next, running map[string]json.RawMessage, base uint64) []byte {
	changed, removed := diffNamed(next, running, nil, nil)
	return deltaBody(field, changed, removed, func(name string) json.RawMessage { return next[name] }, base)
}

// deltaBody is a delta post's body: under field the values of the changed
// names, and the removed names, both sorted; nil when both are empty.
// Only what changed is sorted: an endpoint change among 10,000 backends
// must not cost a sorted copy of every name.
func deltaBody(field string, changed, removed []string, value func(string) json.RawMessage, base uint64) []byte {
	if len(changed) == 0 && len(removed) == 0 {
		return nil
	}
	slices.Sort(changed)
	slices.Sort(removed)
	buf := fmt.Appendf(nil, `{"base":%d,"%s":[`, base, field)
	for i, name := range changed {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, value(name)...)
	}
	buf = append(buf, `],"removed":`...)
	names, _ := json.Marshal(removed) // strings: cannot fail
	if removed == nil {
		names = []byte("[]")
	}
	buf = append(buf, names...)
	return append(buf, '}')
}

// luaStaple is an OCSP response in the certificates payload.
type luaStaple struct {
	Response []byte `json:"response"` // DER, base64 in JSON
	Expires  int64  `json:"expires"`  // Unix seconds: not stapled from then on
}

// certificatesPayload is the body of POST /configuration/certificates,
// with the OCSP staples (by certificate id) of the certificates that
// ask for stapling.
func (d desiredState) certificatesPayload(staples map[string]ocspStaple) ([]byte, error) {
	body := struct {
		Certificates map[string]string `json:"certificates"`
		Servers      map[string]string `json:"servers"`
		// Default is the id served when no server name matches.
		Default string               `json:"default,omitempty"`
		OCSP    map[string]luaStaple `json:"ocsp,omitempty"`
	}{Certificates: map[string]string{}, Servers: map[string]string{}}
	for id, c := range d.Certificates {
		body.Certificates[id] = c.PEM
		for _, h := range c.Hosts {
			body.Servers[h] = id
		}
		if c.Default {
			body.Default = id
		}
		if st, ok := staples[id]; ok && c.OCSP {
			if body.OCSP == nil {
				body.OCSP = map[string]luaStaple{}
			}
			body.OCSP[id] = luaStaple{Response: st.Response, Expires: st.Expires.Unix()}
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		// json.Marshal of strings cannot fail; say so without the PEM.
		return nil, fmt.Errorf("encode certificates payload")
	}
	return data, nil
}
