// Package bus is the contract between Switchyard's stages: the subject graph,
// the headers every message carries, and the message types. No stage imports
// another stage; they all import this package.
package bus

import (
	"fmt"
	"strings"
)

// SchemaVersion is carried in every message header and in every subject. A
// breaking change to a message type bumps it, and the new subjects live
// beside the old ones until every stage speaks the new version.
const SchemaVersion = "v1"

// Root is the first two tokens of every Switchyard subject.
const Root = "switchyard." + SchemaVersion

// Stage names, used in subjects, stream names and the producing-stage header.
const (
	StageWatcher     = "watcher"
	StageTranslator  = "translator"
	StageAnnotations = "annotations"
	StageRenderer    = "renderer"
	StageApplier     = "applier"
	// StageWebhook is the admission webhook: it follows the watcher's
	// table and publishes nothing.
	StageWebhook = "webhook"
)

// Stages lists the pipeline in order.
var Stages = []string{StageWatcher, StageTranslator, StageAnnotations, StageRenderer, StageApplier}

// The subject graph. Each stage owns the subjects below switchyard.v1.<stage>.
// A state table holds one message per key under <stage>.<kind>.<key tokens>,
// closed by a commit message at <stage>.commit once a generation is complete.
//
//	watcher.object.<kind>.<namespace>.<name>   Kubernetes object JSON
//	translator.server.<host>                   Server
//	translator.backend.<name>                  Backend
//	translator.certificate.<namespace>.<name>  Certificate
//	translator.ingress.<namespace>.<name>      IngressInfo
//	translator.stream.services                 StreamServices (TCP and UDP services, streams.go)
//	annotations.*                              as translator.*, with features filled in
//	renderer.file.<name>                       RenderedFile (nginx.conf, servers/*.conf)
//	renderer.filepart.<name>.<i>               FilePart: part i of a file too large for one message
//	renderer.backend.<name>                    Lua backend payload
//	renderer.certificate.<namespace>.<name>    Lua certificate payload
//	renderer.route.<host>                      Lua route of a host routed in Lua (no server block)
//	renderer.passthrough.<host>                PassthroughEndpoints of a TLS passthrough host (passthrough.go)
//	applier.result                             ApplyResult (plain publish, not a table)
//	refusals.ingress.<namespace>.<name>        Refusal: NGINX refused what the Ingress rendered (bus/refusals.go)
//	refusals.configmap.<key>                   Refusal: NGINX refused a ConfigMap key's value
//	refusals.services.<protocol>.<port>        Refusal: NGINX refused a TCP or UDP services entry (or could not bind its port)
const (
	KindObject      = "object"
	KindServer      = "server"
	KindBackend     = "backend"
	KindCertificate = "certificate"
	KindIngress     = "ingress"
	KindFile        = "file"
	KindRoute       = "route"
	KindFilePart    = "filepart"
	KindConfig      = "config"
)

// CommitToken is the last token of a stage's commit subject.
const CommitToken = "commit"

// StageSubject is the root of everything one stage publishes.
func StageSubject(stage string) string { return Root + "." + stage }

// CommitSubject is where a stage announces that a generation is complete.
func CommitSubject(stage string) string { return StageSubject(stage) + "." + CommitToken }

// ApplyResultSubject carries the applier's outcome for every generation.
const ApplyResultSubject = Root + "." + StageApplier + ".result"

// StreamName is the JetStream stream that keeps the last state of each key
// one stage publishes, so a restarted consumer catches up without a resync.
func StreamName(stage string) string {
	return "SWITCHYARD_" + strings.ToUpper(SchemaVersion) + "_" + strings.ToUpper(stage)
}

// Key builds a table key from a kind and name parts. Each part is escaped, so
// a Kubernetes name holding '.' never splits into two subject tokens.
func Key(kind string, parts ...string) string {
	var b strings.Builder
	b.WriteString(kind)
	for _, p := range parts {
		b.WriteByte('.')
		b.WriteString(EscapeToken(p))
	}
	return b.String()
}

// SplitKey reverses Key.
func SplitKey(key string) (kind string, parts []string, err error) {
	tokens := strings.Split(key, ".")
	kind = tokens[0]
	for _, t := range tokens[1:] {
		p, err := UnescapeToken(t)
		if err != nil {
			return "", nil, fmt.Errorf("key %q: %w", key, err)
		}
		parts = append(parts, p)
	}
	return kind, parts, nil
}

// ClusterScope stands in for the namespace of cluster-scoped objects. It
// cannot collide with an escaped namespace: EscapeToken never yields a lone '_'.
const ClusterScope = "_"

// EscapeToken makes s safe as one subject token: lowercase letters, digits
// and '-' stay, every other byte becomes _xx (hex). The empty string becomes
// "_e" so a token is never empty.
func EscapeToken(s string) string {
	if s == ClusterScope {
		return s
	}
	if s == "" {
		return "_e"
	}
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('_')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0xf])
	}
	return b.String()
}

// UnescapeToken reverses EscapeToken.
func UnescapeToken(t string) (string, error) {
	if t == ClusterScope {
		return t, nil
	}
	if t == "_e" {
		return "", nil
	}
	var b strings.Builder
	for i := 0; i < len(t); i++ {
		if t[i] != '_' {
			b.WriteByte(t[i])
			continue
		}
		if i+2 >= len(t) {
			return "", fmt.Errorf("truncated escape in token %q", t)
		}
		var v byte
		for _, h := range []byte(t[i+1 : i+3]) {
			v <<= 4
			switch {
			case h >= '0' && h <= '9':
				v |= h - '0'
			case h >= 'a' && h <= 'f':
				v |= h - 'a' + 10
			default:
				return "", fmt.Errorf("bad escape in token %q", t)
			}
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), nil
}
