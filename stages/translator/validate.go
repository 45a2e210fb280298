package translator

import (
	"fmt"
	"regexp"

	networkingv1 "k8s.io/api/networking/v1"

	"switchyard.dev/switchyard/bus"
)

// Whole-string patterns for everything of an Ingress that reaches nginx.conf.
// They refuse CR, LF, NUL, whitespace, ';', '{', '}', quotes, '$' and '\'
// by construction: none of those is in any class below.
var (
	// hostPattern: a lowercase DNS name, optionally with one leading "*." label.
	hostPattern = regexp.MustCompile(`^(\*\.)?([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	// strictPathPattern is ingress-nginx's strict-validate-path-type rule
	// for Exact and Prefix paths.
	strictPathPattern = regexp.MustCompile(`^/[A-Za-z0-9._\-/]*$`)
	// ImplementationSpecific paths follow bus.RegexPathPattern.
	// serviceNamePattern is a DNS-1035 label; portNamePattern an IANA
	// service name. Both end up in backend names.
	serviceNamePattern = regexp.MustCompile(`^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$`)
	portNamePattern    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,13}[a-z0-9])?$`)
)

// validateIngress checks every host, path and Service reference. Any
// failure rejects the whole Ingress: serving part of what a user wrote with
// a path silently dropped would route traffic where nobody expects it.
func validateIngress(ing *networkingv1.Ingress, rules pathRules) []bus.Problem {
	var problems []bus.Problem
	add := func(field, format string, args ...any) {
		problems = append(problems, bus.Problem{Field: field, Reason: "InvalidValue", Message: fmt.Sprintf(format, args...)})
	}
	checkBackend := func(field string, b *networkingv1.IngressBackend) {
		if b == nil || b.Service == nil {
			return
		}
		if !serviceNamePattern.MatchString(b.Service.Name) {
			add(field+".service.name", "%q is not a valid Service name", b.Service.Name)
		}
		if p := b.Service.Port; p.Name != "" && !portNamePattern.MatchString(p.Name) {
			add(field+".service.port.name", "%q is not a valid port name", p.Name)
		} else if p.Name == "" && (p.Number < 1 || p.Number > 65535) {
			add(field+".service.port.number", "%d is not a valid port number", p.Number)
		}
	}
	checkBackend("spec.defaultBackend", ing.Spec.DefaultBackend)
	for i, rule := range ing.Spec.Rules {
		if rule.Host != "" {
			if msg := checkHost(rule.Host); msg != "" {
				add(fmt.Sprintf("spec.rules[%d].host", i), "%s", msg)
			}
		}
		if rule.HTTP == nil {
			continue
		}
		for j, p := range rule.HTTP.Paths {
			field := fmt.Sprintf("spec.rules[%d].http.paths[%d]", i, j)
			if msg := checkPath(p, rules); msg != "" {
				add(field+".path", "%s", msg)
			}
			checkBackend(field+".backend", &p.Backend)
		}
	}
	for i, entry := range ing.Spec.TLS {
		for j, h := range entry.Hosts {
			if msg := checkHost(h); msg != "" {
				add(fmt.Sprintf("spec.tls[%d].hosts[%d]", i, j), "%s", msg)
			}
		}
	}
	return problems
}

// checkHost validates a host name as written, before any case folding:
// Unicode case mapping folds some non-ASCII letters into ASCII ones ('İ'
// into 'i', the Kelvin sign into 'k'), so "uniİ.test" would be served as
// "unii.test", another name than the one written. Only ASCII passes;
// internationalized names are written in their IDNA form ("xn--…").
func checkHost(h string) string {
	if !isASCII(h) {
		return fmt.Sprintf("%q is not a valid host name: only ASCII names are served; write an internationalized name in its IDNA (xn--) form", h)
	}
	if len(h) > 253 || !hostPattern.MatchString(normalizeHost(h)) {
		return fmt.Sprintf("%q is not a valid host name", h)
	}
	return ""
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// pathRules are the settings and annotations that decide which paths an
// Ingress may have.
type pathRules struct {
	// regexPrefix: strict-validate-path-type is false and the Ingress has
	// use-regex "true", so a Prefix path may be a regular expression, as
	// ingress-nginx accepted before v1.12 (still in the safe grammar).
	regexPrefix bool
}

func checkPath(p networkingv1.HTTPIngressPath, rules pathRules) string {
	path := pathOf(p)
	if rules.regexPrefix && p.PathType != nil && *p.PathType == networkingv1.PathTypePrefix && !strictPathPattern.MatchString(path) {
		if err := bus.CheckRegexPath(path); err != nil {
			return err.Error() + " (a Prefix path with use-regex while strict-validate-path-type is false is a regular expression)"
		}
		return ""
	}
	if p.PathType == nil || *p.PathType == networkingv1.PathTypeImplementationSpecific {
		// Any such path becomes a regex when its Ingress asks for
		// use-regex or rewrite-target, so it must be a valid one.
		if err := bus.CheckRegexPath(path); err != nil {
			return err.Error() + " (ImplementationSpecific paths may become regular expressions)"
		}
		return ""
	}
	if len(path) > 1024 || !strictPathPattern.MatchString(path) {
		return fmt.Sprintf("%q is not a valid %s path: it must start with '/' and match %s (strict-validate-path-type; with it false, a Prefix path of an Ingress with use-regex may be a regular expression)", path, *p.PathType, strictPathPattern)
	}
	return ""
}
