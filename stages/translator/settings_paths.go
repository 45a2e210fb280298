package translator

import (
	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// pathsSettings are the ConfigMap keys about Ingress paths
// (bus.PathsSettings).
var pathsSettings = map[string]settingParser{
	"strict-validate-path-type": boolSetting(func(s *bus.Settings) *bool { return &s.StrictValidatePathType }),
}

// pathRules decides which paths ing may have: a regex Prefix path needs
// strict-validate-path-type false and the Ingress's own use-regex "true"
// (read here as ingress-nginx's GetBoolAnnotation; the rewrite plugin owns
// the annotation and reports a value that does not parse).
func (t *Translator) pathRules(ing *networkingv1.Ingress) pathRules {
	if t.strictPathType() {
		return pathRules{}
	}
	useRegex, _ := parseBool(ing.Annotations[t.cfg.annotationsPrefix()+"/use-regex"])
	return pathRules{regexPrefix: useRegex}
}
