package annotations

import (
	"fmt"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/internal/catalog"
	"switchyard.dev/switchyard/plugins"
)

// The key policy: which plugin owns an annotation and whether its value may
// reach it at all (pattern, risk level, snippets), checked before any plugin
// sees a value.

// split checks the Ingress's annotations the host can check itself
// (ownership, pattern, risk, snippets) and sorts the rest by plugin.
func (a *Annotator) split(info *bus.IngressInfo, res *ingressResult) map[*hosted]plugins.Ingress {
	byPlugin := map[*hosted]plugins.Ingress{}
	maxRisk, _ := plugins.ParseRisk(a.settings.AnnotationsRiskLevel)
	if maxRisk == 0 {
		maxRisk = plugins.RiskHigh
	}
	canary := info.Canary // the translator's decision
	a.keyBuf = a.keyBuf[:0]
	for key := range info.Annotations {
		a.keyBuf = append(a.keyBuf, key)
	}
	slices.Sort(a.keyBuf) // problems come in key order
	for _, key := range a.keyBuf {
		value, snippet := a.typedValue(key, info.Annotations[key])
		owner := a.owners[key]
		if problem, ok := a.blockedWord(key, info.Annotations[key]); ok {
			res.reject(problem)
			continue
		}
		if canary && (owner == nil || (owner.plugin.desc.Name != canaryPlugin && owner.plugin.desc.Name != balancingPlugin)) {
			// A canary Ingress ignores its other annotations, as in
			// ingress-nginx; a name nobody knows is still a typo to report.
			if owner == nil {
				a.unknownOnCanary(key, res)
			}
			continue
		}
		if owner == nil {
			a.unowned(key, res)
			continue
		}
		if problem, ok := a.refuse(owner, key, value, maxRisk, snippet); ok {
			res.reject(problem)
			continue
		}
		if problem, ok := a.refuseForeignSecret(owner, info.Namespace, key, value); ok {
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
			// refuseForeignSecret has let only a Secret the Ingress may
			// read through; a name the plugin cannot read it reports.
			if id, ok := bus.ParseSecretRef(info.Namespace, value); ok {
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

// refuseForeignSecret refuses a SecretRef annotation naming a Secret of
// another namespace, unless the controller ConfigMap allows it
// (allow-cross-namespace-resources): the plugin would get the Secret's
// data, which the Ingress's owner may have no right to read.
func (a *Annotator) refuseForeignSecret(owner *ownedKey, namespace, key, value string) (bus.Problem, bool) {
	if !owner.spec.SecretRef {
		return bus.Problem{}, false
	}
	id, ok := bus.ParseSecretRef(namespace, value)
	if !ok || bus.RefAllowed(namespace, id, a.settings.AllowCrossNamespaceResources) {
		return bus.Problem{}, false
	}
	return bus.Problem{Field: "metadata.annotations[" + key + "]", Reason: ReasonAnnotationRefused,
		Message: bus.CrossNamespaceRefused("annotation "+key, "Secret", id, namespace)}, true
}

// modSecuritySnippet is the one snippet annotation with a typed reading
// (features.ParseSecRuleEngine), relative to the prefix.
const modSecuritySnippet = "modsecurity-snippet"

// typedValue is the value of the annotation key as the plugins see it, and
// whether it is still a snippet (raw text, refused). A modsecurity-snippet
// that is exactly one SecRuleEngine line becomes its mode ("On"): a typed
// value, which many real Ingresses use and which is no snippet.
func (a *Annotator) typedValue(key, value string) (string, bool) {
	if !isSnippet(key) {
		return value, false
	}
	if key == a.prefix+"/"+modSecuritySnippet {
		if mode, ok := features.ParseSecRuleEngine(value); ok {
			return mode, false
		}
	}
	return value, true
}

// refuse checks what the host checks for every annotation, before any
// plugin sees the value. snippet says the value is raw snippet text.
func (a *Annotator) refuse(owner *ownedKey, key, value string, maxRisk plugins.Risk, snippet bool) (bus.Problem, bool) {
	field := func() string { return "metadata.annotations[" + key + "]" } // only for a refusal
	switch {
	case owner.spec.Risk > maxRisk:
		return bus.Problem{Field: field(), Reason: ReasonAnnotationRefused, Message: fmt.Sprintf(
			"annotation %s has risk %s, above the controller's annotations-risk-level %s", key, owner.spec.Risk, maxRisk)}, true
	case snippet && (!a.settings.AllowSnippetAnnotations || key == a.prefix+"/"+modSecuritySnippet):
		// Its plugin takes the typed value only: raw text has nowhere
		// to go, snippets allowed or not.
		return a.snippetProblem(key), true
	case strings.ContainsAny(value, "\r\n\x00"):
		return bus.Problem{Field: field(), Reason: ReasonInvalidAnnotation, Message: fmt.Sprintf(
			"annotation %s: the value holds a line break or NUL", key)}, true
	case !a.matches(owner, value):
		return bus.Problem{Field: field(), Reason: ReasonInvalidAnnotation, Message: fmt.Sprintf(
			"annotation %s: value %s does not match %s", key, quoteForMessage(value), owner.spec.Pattern)}, true
	}
	return bus.Problem{}, false
}

// blockedWord refuses an annotation under the prefix whose value holds a
// word of the ConfigMap's annotation-value-word-blocklist: its Ingress is
// not served, as in ingress-nginx.
func (a *Annotator) blockedWord(key, value string) (bus.Problem, bool) {
	// Checked for every annotation of every Ingress: nothing to do, the
	// usual case, costs nothing.
	if len(a.settings.AnnotationValueWordBlocklist) == 0 || !strings.HasPrefix(key, a.prefix+"/") {
		return bus.Problem{}, false
	}
	for _, word := range a.settings.AnnotationValueWordBlocklist {
		if word != "" && strings.Contains(value, word) {
			return bus.Problem{Field: "metadata.annotations[" + key + "]", Reason: ReasonAnnotationRefused, Message: fmt.Sprintf(
				"annotation %s: the value holds %s, a word of the controller's annotation-value-word-blocklist", key, quoteForMessage(word))}, true
		}
	}
	return bus.Problem{}, false
}

// maxMatchMemo bounds how many accepted values of one key matches
// remembers.
const maxMatchMemo = 256

// matches says whether value matches owner's whole-string pattern. The
// values that did are remembered, up to maxMatchMemo per key: across
// 10,000 Ingresses most values repeat ("64m", "3600", "true"), and a map
// lookup costs a fraction of a regex match. A key's pattern never changes
// while the host runs (a plugin that comes back with another is refused).
func (a *Annotator) matches(owner *ownedKey, value string) bool {
	memo := a.matched[owner]
	if _, ok := memo[value]; ok {
		return true
	}
	if !owner.pattern.MatchString(value) {
		return false
	}
	if memo == nil {
		memo = map[string]struct{}{}
		a.matched[owner] = memo
	}
	if len(memo) < maxMatchMemo {
		memo[value] = struct{}{}
	}
	return true
}

// unowned handles an annotation no plugin owns. Nothing under our prefix
// passes in silence: a snippet is refused (it may be what protects the
// Ingress); one of ingress-nginx's names is refused or served with a
// warning as the catalog says; any other name is reported as unknown (a
// typo serves the Ingress without what was meant). Keys under other
// prefixes are not ours to judge.
func (a *Annotator) unowned(key string, res *ingressResult) {
	name, ours := strings.CutPrefix(key, a.prefix+"/")
	if !ours {
		return
	}
	field := "metadata.annotations[" + key + "]"
	entry, known := catalog.LookupAnnotation(name)
	if known && entry.AliasOf != "" {
		entry, _ = catalog.LookupAnnotation(entry.AliasOf)
	}
	switch {
	case isSnippet(key):
		res.reject(a.snippetProblem(key))
	case known && entry.Status == catalog.Refused:
		res.reject(bus.Problem{Field: field, Reason: ReasonAnnotationRefused,
			Message: fmt.Sprintf("annotation %s is not supported by Switchyard and is refused: %s", key, entry.Reason)})
	case known:
		res.problems = append(res.problems, bus.Problem{Field: field, Reason: ReasonAnnotationNotSupported,
			Message: fmt.Sprintf("annotation %s is not supported by Switchyard and is ignored: %s", key, entry.Reason)})
	default:
		res.problems = append(res.problems, bus.Problem{Field: field, Reason: ReasonUnknownAnnotation,
			Message: unknownMessage(key, a.prefix, name)})
	}
}

// unknownOnCanary reports an unknown name under the prefix on a canary
// Ingress, whose ingress-nginx annotations are ignored (see split).
func (a *Annotator) unknownOnCanary(key string, res *ingressResult) {
	name, ours := strings.CutPrefix(key, a.prefix+"/")
	if _, known := catalog.LookupAnnotation(name); !ours || known {
		return
	}
	res.problems = append(res.problems, bus.Problem{Field: "metadata.annotations[" + key + "]", Reason: ReasonUnknownAnnotation,
		Message: unknownMessage(key, a.prefix, name)})
}

// removedAnnotations are names ingress-nginx removed that old manifests
// still carry, with what replaces them.
var removedAnnotations = map[string]string{
	"secure-backends": `backend-protocol: "HTTPS"`,
	"grpc-backend":    `backend-protocol: "GRPC"`,
}

// unknownMessage names the closest ingress-nginx annotation, since an
// unknown name under the prefix is most often a typo.
func unknownMessage(key, prefix, name string) string {
	msg := fmt.Sprintf("annotation %s is not an ingress-nginx or Switchyard annotation; it is ignored", quoteForMessage(key))
	if use, ok := removedAnnotations[name]; ok {
		return msg + fmt.Sprintf(" (removed from ingress-nginx long ago: use %s/%s)", prefix, use)
	}
	if near := catalog.Nearest(name); near != "" {
		msg += fmt.Sprintf(" (did you mean %s/%s?)", prefix, near)
	}
	return msg
}

func isSnippet(key string) bool { return strings.HasSuffix(key, "-snippet") }

// snippetProblem refuses a snippet annotation, saying why as the
// controller ConfigMap's allow-snippet-annotations reads.
func (a *Annotator) snippetProblem(key string) bus.Problem {
	msg := fmt.Sprintf("annotation %s is a snippet, and snippet annotations are off (allow-snippet-annotations)", key)
	if a.settings.AllowSnippetAnnotations {
		msg = fmt.Sprintf("annotation %s: Switchyard does not render snippets; move the configuration to an annotation or a plugin", key)
	}
	if strings.HasSuffix(key, "/"+modSecuritySnippet) {
		msg += "; only a snippet that is exactly one SecRuleEngine On, DetectionOnly or Off line is read (as the engine mode)"
	}
	return bus.Problem{Field: "metadata.annotations[" + key + "]", Reason: ReasonAnnotationRefused, Message: msg}
}

// quoteForMessage shows a value in an error message, cut short, so a long
// or hostile value cannot flood logs and Events.
func quoteForMessage(v string) string {
	if len(v) > 64 {
		v = v[:64] + "…"
	}
	return fmt.Sprintf("%q", v)
}

func (a *Annotator) displayKey(key string) string {
	if strings.Contains(key, "/") {
		return key
	}
	return a.prefix + "/" + key
}
