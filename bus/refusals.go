package bus

import (
	"encoding/json"
	"regexp"
)

// When `nginx -t` refuses a configuration, the applier traces the refusal to
// the object it came from through the attribution comments the renderer
// writes, and publishes it in the refusals table. The renderer follows that
// table and renders again without the refused source: an Ingress is left
// out, a ConfigMap key falls back to its default. Every refusal names the
// revision of the source it refused, so a changed source is tried again.
//
//	refusals.ingress.<namespace>.<name>   Refusal
//	refusals.configmap.<key>              Refusal
//	refusals.services.<protocol>/<port>   Refusal
//
// The attribution comments, in every rendered file:
//
//	# source ingress <namespace>/<name> rev=<rev>   the lines below come from that Ingress
//	# source configmap <key> rev=<rev>              ... from that controller ConfigMap key
//	# source services <protocol>/<port> rev=<rev>   ... from that TCP or UDP services entry
//	# source switchyard                             ... from Switchyard itself (not attributable)
//	# refused <kind> <name> rev=<rev>               a refusal the render honours (nginx.conf)
//
// A comment holds for the lines after it up to the next "# source" comment
// of the same file.
//
// A services entry is also refused when NGINX passed it but could not bind
// its port on the reload (another process holds it): the applier finds the
// listen line of the address NGINX names. That refusal lasts while the port
// is held: the applier tries to bind it now and then and drops the refusal
// once it can.

// TableRefusals is the table of the applier's refusals. It is not a stage
// of the pipeline: the applier writes it and the renderer and the status
// writer follow it.
const TableRefusals = "refusals"

// Kinds of refused sources.
const (
	RefusedIngress   = "ingress"
	RefusedConfigMap = "configmap"
	// RefusedServices is a TCP or UDP services entry, named
	// "<protocol>/<port>" ("tcp/9000").
	RefusedServices = "services"
)

// ReasonRefusedByNginx is the Problem reason of a refused source.
const ReasonRefusedByNginx = "RefusedByNginx"

// Refusal is one source whose configuration NGINX refused.
type Refusal struct {
	Kind string `json:"kind"` // RefusedIngress or RefusedConfigMap
	// Name is "namespace/name" of an Ingress, or the ConfigMap key.
	Name string `json:"name"`
	// Rev is the revision of the source that was refused (RevPattern).
	Rev string `json:"rev"`
	// Message is NGINX's complaint, without the state directory's paths.
	Message string `json:"message"`
	// File and Line are where in the rendered configuration NGINX (or the
	// applier, for a complaint that names no line) found it.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// Key is the refusal's key in the refusals table.
func (r Refusal) Key() string { return RefusalKey(r.Kind, r.Name) }

// Problem is the refusal said as a Problem of its object.
func (r Refusal) Problem() Problem {
	field := "nginx"
	what := "NGINX refused the configuration rendered from this Ingress; it is not served until it changes"
	switch r.Kind {
	case RefusedConfigMap:
		field = "data." + r.Name
		what = "NGINX refused the configuration rendered from this key; its default is used until it changes"
	case RefusedServices:
		if _, port, ok := cutSlash(r.Name); ok {
			field = "data." + port
		}
		what = "NGINX refused this services entry; it is not served until it changes or its port is free"
	}
	return Problem{Field: field, Reason: ReasonRefusedByNginx, Message: what + ": " + r.Message}
}

// RefusalKey is the table key of a source's refusal: "ingress.<ns>.<name>",
// "configmap.<key>" or "services.<protocol>.<port>".
func RefusalKey(kind, name string) string {
	if kind == RefusedIngress || kind == RefusedServices {
		if ns, n, ok := cutSlash(name); ok {
			return Key(kind, ns, n)
		}
	}
	return Key(kind, name)
}

func cutSlash(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return s[:i], s[i+1:], true
		}
	}
	return "", "", false
}

// SourceNamePattern is what a source name in an attribution comment may
// hold: Kubernetes names and ConfigMap keys, and nothing that could end the
// comment line. Writers and readers of the comments both check it.
var SourceNamePattern = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,252})?(/[a-z0-9]([-a-z0-9.]{0,252})?)?$`)

// RevPattern is a revision as the renderer computes it: the first 48 bits
// of a SHA-256, in hex.
var RevPattern = regexp.MustCompile(`^[0-9a-f]{12}$`)

// RefusalTable is a follower's copy of the refusals table, by key.
type RefusalTable map[string]Refusal

// Update folds a snapshot of the refusals table in. A value that does not
// decode is dropped: a refusal nobody understands refuses nothing.
func (t RefusalTable) Update(snap Snapshot) {
	if snap.Full {
		clear(t)
	}
	for _, key := range snap.Deletes {
		delete(t, key)
	}
	for key, data := range snap.Puts {
		var ref Refusal
		if json.Unmarshal(data, &ref) == nil {
			t[key] = ref
		} else {
			delete(t, key)
		}
	}
}
