package translator

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"switchyard.dev/switchyard/bus"
)

// The ConfigMap keys add-headers and proxy-set-headers name other
// ConfigMaps whose data are headers (name: value), as in ingress-nginx.
// They are read here, so the renderer gets checked headers and a change of
// those ConfigMaps re-renders like a change of the controller ConfigMap.

// maxHeaders bounds the headers of one such ConfigMap.
const maxHeaders = 64

// resolveHeaders fills s.AddHeaderValues and s.ProxySetHeaderValues from
// the ConfigMaps s names. A missing ConfigMap or an invalid header is a
// Problem on the key, and then none of that ConfigMap's headers is used:
// half a set of headers would be a silent change of meaning.
func resolveHeaders(s *bus.Settings, configMaps map[string]*corev1.ConfigMap) []bus.Problem {
	var problems []bus.Problem
	resolve := func(key, ref string) map[string]string {
		if ref == "" {
			return nil
		}
		cm, ok := configMaps[ref]
		if !ok {
			problems = append(problems, bus.Problem{Field: "data." + key, Reason: "ConfigMapNotFound",
				Message: fmt.Sprintf("%s: ConfigMap %s is not found; no headers are added until it exists", key, ref)})
			return nil
		}
		headers, err := checkHeaders(cm.Data)
		if err != nil {
			problems = append(problems, bus.Problem{Field: "data." + key, Reason: ReasonInvalidValue,
				Message: fmt.Sprintf("%s: ConfigMap %s: %v; none of its headers is added", key, ref, err)})
			return nil
		}
		return headers
	}
	s.AddHeaderValues = resolve("add-headers", s.AddHeaders)
	s.ProxySetHeaderValues = resolve("proxy-set-headers", s.ProxySetHeaders)
	return problems
}

// checkHeaders validates each header as a plugin's response header is
// validated: a token name, and a value without quotes, "$", "\", braces or
// control characters (CR, LF, NUL), so nothing of it can be NGINX syntax.
func checkHeaders(data map[string]string) (map[string]string, error) {
	if len(data) > maxHeaders {
		return nil, fmt.Errorf("%d headers, at most %d", len(data), maxHeaders)
	}
	out := make(map[string]string, len(data))
	for _, name := range slices.Sorted(maps.Keys(data)) {
		if !headerNamePattern.MatchString(name) {
			return nil, fmt.Errorf("header name %s is not an HTTP token (letters, digits and !#%%&'*+.^_|~-, at most 128)", clipQuoted(name))
		}
		if err := (bus.Header{Name: name, Value: data[name]}).Validate(); err != nil {
			// The error names the header, never the value.
			return nil, err
		}
		out[name] = data[name]
	}
	return out, nil
}

// headerConfigMaps are the ConfigMaps the settings name, by "namespace/name".
func headerConfigMaps(s *bus.Settings) map[string]bool {
	refs := map[string]bool{}
	for _, ref := range []string{s.AddHeaders, s.ProxySetHeaders} {
		if ref != "" {
			refs[ref] = true
		}
	}
	return refs
}
