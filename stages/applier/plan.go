package applier

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"switchyard.dev/switchyard/bus"
)

// Desired is what the renderer asks for, split into the static part (files,
// a change reloads NGINX) and the dynamic part (Lua payloads, never reload).
type Desired struct {
	Files        map[string]string          // path below conf/ → content
	Backends     map[string]json.RawMessage // backend name → JSON
	Certificates map[string]luaCertificate  // "namespace/name" → PEM and hosts
}

type luaCertificate struct {
	PEM   string   `json:"pem"`
	Hosts []string `json:"hosts"`
}

// Plan says what one apply does.
type Plan struct {
	WriteConfig      bool // test, swap and (re)load the files
	PushBackends     bool
	PushCertificates bool
}

// Decide compares what runs with what is desired. Backends and
// certificates are left out of the static comparison: ingress-nginx reloads
// for far less, and every avoided reload is a worker generation not drained.
// A freshly started NGINX has empty shared dictionaries, so everything is
// pushed to it.
func Decide(running *Desired, next Desired, freshNginx bool) Plan {
	if running == nil {
		return Plan{WriteConfig: true, PushBackends: true, PushCertificates: true}
	}
	return Plan{
		WriteConfig:      !maps.Equal(running.Files, next.Files),
		PushBackends:     freshNginx || !maps.EqualFunc(running.Backends, next.Backends, jsonEqual),
		PushCertificates: freshNginx || !maps.EqualFunc(running.Certificates, next.Certificates, certEqual),
	}
}

func jsonEqual(a, b json.RawMessage) bool { return string(a) == string(b) }

func certEqual(a, b luaCertificate) bool {
	if a.PEM != b.PEM || len(a.Hosts) != len(b.Hosts) {
		return false
	}
	for i := range a.Hosts {
		if a.Hosts[i] != b.Hosts[i] {
			return false
		}
	}
	return true
}

// desiredFromEntries decodes the renderer's table.
func desiredFromEntries(entries map[string][]byte) (Desired, error) {
	d := Desired{Files: map[string]string{}, Backends: map[string]json.RawMessage{}, Certificates: map[string]luaCertificate{}}
	for key, data := range entries {
		kind, parts, err := bus.SplitKey(key)
		if err != nil {
			return d, err
		}
		switch kind {
		case bus.KindFile:
			var f bus.RenderedFile
			if err := json.Unmarshal(data, &f); err != nil {
				return d, fmt.Errorf("decode %s: %w", key, err)
			}
			d.Files[f.Path] = f.Content
		case bus.KindBackend:
			d.Backends[parts[0]] = json.RawMessage(data)
		case bus.KindCertificate:
			var c luaCertificate
			if err := json.Unmarshal(data, &c); err != nil {
				return d, fmt.Errorf("decode %s: %w", key, err)
			}
			if len(parts) == 2 {
				d.Certificates[parts[0]+"/"+parts[1]] = c
			}
		default:
			return d, fmt.Errorf("renderer key %q: unknown kind %q", key, kind)
		}
	}
	return d, nil
}

// backendsPayload is the body of POST /configuration/backends: every
// backend, sorted by name so equal states give equal bodies.
func (d Desired) backendsPayload() []byte {
	buf := []byte{'['}
	for i, n := range slices.Sorted(maps.Keys(d.Backends)) {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, d.Backends[n]...)
	}
	return append(buf, ']')
}

// certificatesPayload is the body of POST /configuration/certificates.
func (d Desired) certificatesPayload() ([]byte, error) {
	body := struct {
		Certificates map[string]string `json:"certificates"`
		Servers      map[string]string `json:"servers"`
	}{Certificates: map[string]string{}, Servers: map[string]string{}}
	for id, c := range d.Certificates {
		body.Certificates[id] = c.PEM
		for _, h := range c.Hosts {
			body.Servers[h] = id
		}
	}
	data, err := json.Marshal(body)
	if err != nil {
		// json.Marshal of strings cannot fail; say so without the PEM.
		return nil, fmt.Errorf("encode certificates payload")
	}
	return data, nil
}
