package integration

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/templates"
)

// Classic probes the OWASP Core Rule Set knows at paranoia level 1.
const (
	sqlInjectionPath = "/?id=1%27%20OR%20%271%27%3D%271"                     // id=1' OR '1'='1
	xssPath          = "/?q=%3Cscript%3Ealert(document.cookie)%3C/script%3E" // q=<script>alert(document.cookie)</script>
)

// modSecurityIngresses are "waf" (enable-modsecurity with the Core Rule
// Set) and "plain" (no annotation), both on echo-a.
func modSecurityIngresses() string {
	return proxyIngress("waf", "waf.example.com", "echo-a", map[string]string{
		"enable-modsecurity": "true", "enable-owasp-core-rules": "true", "modsecurity-transaction-id": "$request_id"}) +
		"---\n" + proxyIngress("plain", "plain.example.com", "echo-a", nil)
}

// TestModSecurityBlocksThroughNginx: with an operator's configuration
// saying SecRuleEngine On (--modsecurity-config, as ingress-nginx users
// mount over modsecurity.conf), the Core Rule Set answers a SQL injection
// and an XSS probe with 403 on the Ingress that asks for it, lets a clean
// request through, and the Ingress without the annotation is unaffected.
// Then the ConfigMap's enable-modsecurity and enable-owasp-modsecurity-crs
// put every Ingress behind it, except one that says enable-modsecurity:
// "false", and the catch-all server's default backend with it.
func TestModSecurityBlocksThroughNginx(t *testing.T) {
	e := newBackends(t)
	config := filepath.Join(e.dir, "..", "modsecurity-on.conf")
	harness.WriteFile(t, config, strings.Replace(templates.ModSecurityDefault, "SecRuleEngine DetectionOnly", "SecRuleEngine On", 1))
	e.write("ingresses.yaml", modSecurityIngresses())
	e.write("unguarded.yaml", proxyIngress("unguarded", "unguarded.example.com", "echo-a", map[string]string{"enable-modsecurity": "false"}))
	// echo-a answers what no Ingress names, too.
	e.sy = harness.StartSwitchyard(t, e.dir, "--modsecurity-config", config, "--configmap", configMapName, "--default-backend-service", "default/echo-a")

	e.eventually("waf.example.com", "/", "a clean request through ModSecurity", servedBy("a-1"))
	e.eventually("plain.example.com", "/", "the Ingress without ModSecurity", servedBy("a-1"))
	e.expectProbes("waf.example.com", http.StatusForbidden, "the firewalled Ingress")
	e.expectProbes("plain.example.com", http.StatusOK, "the Ingress without ModSecurity")

	e.write("config.yaml", configMapYAML(map[string]string{"enable-modsecurity": "true", "enable-owasp-modsecurity-crs": "true"}))
	e.eventually("plain.example.com", sqlInjectionPath, "the ConfigMap's ModSecurity on the Ingress without the annotation", status(http.StatusForbidden))
	e.eventually("plain.example.com", "/", "a clean request under the ConfigMap's ModSecurity", servedBy("a-1"))
	e.expectProbes("waf.example.com", http.StatusForbidden, "the firewalled Ingress under the ConfigMap")
	e.expectProbes("unguarded.example.com", http.StatusOK, "the Ingress that turns ModSecurity off")
	// The catch-all too, as ingress-nginx's http-level modsecurity: a
	// request for a host no Ingress names is inspected before the default
	// backend gets it.
	e.eventuallyProbes("unknown.example.com", http.StatusForbidden, "the default backend, under the ConfigMap")
}

// expectProbes sends the SQL injection and XSS probes to host and expects
// status for both.
func (e *env) expectProbes(host string, status int, what string) {
	e.t.Helper()
	for _, probe := range []string{sqlInjectionPath, xssPath} {
		if r, err := e.send(http.MethodGet, host, probe, nil, nil); err != nil || r.Status != status {
			e.t.Errorf("%s on %s: got %d %v, want %d", probe, what, r.Status, err, status)
		}
	}
}

// eventuallyProbes waits until both probes get status from host: after a
// change that changes their answer, NGINX's old workers may still take a
// new connection for a moment and answer as before (the change is applied
// when no old worker accepts any more, which the test does not wait for).
func (e *env) eventuallyProbes(host string, want int, what string) {
	e.t.Helper()
	for _, probe := range []string{sqlInjectionPath, xssPath} {
		e.eventually(host, probe, what, status(want))
	}
}

// TestModSecurityDetectsThroughNginx: with the default configuration
// (SecRuleEngine DetectionOnly, as in ingress-nginx) the probe passes and
// the match is audit-logged (NGINX's stderr, in switchyard's log).
func TestModSecurityDetectsThroughNginx(t *testing.T) {
	e := newBackends(t)
	e.write("ingresses.yaml", modSecurityIngresses())
	e.sy = harness.StartSwitchyard(t, e.dir)
	e.eventually("waf.example.com", sqlInjectionPath, "the probe passes in DetectionOnly", servedBy("a-1"))
	e.waitLog("942100") // the Core Rule Set's libinjection SQL injection rule
}

// snippetIngressYAML is an Ingress on echo-a with ModSecurity, the Core
// Rule Set and modsecurity-snippet as real manifests write it: a YAML
// block, so the value ends with a line break.
func snippetIngressYAML(name, snippet string) string {
	return `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: ` + name + `
  namespace: default
  annotations:
    nginx.ingress.kubernetes.io/enable-modsecurity: "true"
    nginx.ingress.kubernetes.io/enable-owasp-core-rules: "true"
    nginx.ingress.kubernetes.io/modsecurity-snippet: |
` + indent(snippet, "      ") + `spec:
  ingressClassName: switchyard
  rules:
  - host: ` + name + `.example.com
    http:
      paths:
      - {path: /, pathType: Prefix, backend: {service: {name: echo-a, port: {name: http}}}}
`
}

func indent(text, prefix string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if line != "" {
			b.WriteString(prefix + line)
		}
	}
	return b.String()
}

// TestModSecuritySnippetEngineThroughNginx: with the default configuration
// (SecRuleEngine DetectionOnly), an Ingress whose modsecurity-snippet is
// just "SecRuleEngine On" blocks the probes with 403 and lets a clean
// request through, while the Ingress without it only detects; a snippet
// holding anything more is refused and not served. Then the ConfigMap's
// modsecurity-snippet, the same line, makes every server block.
func TestModSecuritySnippetEngineThroughNginx(t *testing.T) {
	e := newBackends(t)
	e.write("ingresses.yaml", strings.Join([]string{modSecurityIngresses(),
		snippetIngressYAML("blocking", "SecRuleEngine On\n"),
		snippetIngressYAML("smuggled", "SecRuleEngine On\nSecRuleRemoveById 942100\n")}, "---\n"))
	e.sy = harness.StartSwitchyard(t, e.dir, "--configmap", configMapName)

	e.eventually("blocking.example.com", "/", "a clean request through the blocking engine", servedBy("a-1"))
	e.expectProbes("blocking.example.com", http.StatusForbidden, "the Ingress whose snippet says SecRuleEngine On")
	e.eventually("waf.example.com", sqlInjectionPath, "the probe passes in DetectionOnly", servedBy("a-1"))
	if r, err := e.send(http.MethodGet, "smuggled.example.com", "/", nil, nil); err != nil || r.Status != http.StatusNotFound {
		t.Errorf("the Ingress with a longer snippet: got %d %v, want 404 (refused)", r.Status, err)
	}

	// The ConfigMap's modsecurity-snippet, the same one line, blocks on
	// every server enable-modsecurity turns on.
	e.write("config.yaml", configMapYAML(map[string]string{"enable-modsecurity": "true", "enable-owasp-modsecurity-crs": "true",
		"modsecurity-snippet": "SecRuleEngine On\n"}))
	e.eventually("plain.example.com", sqlInjectionPath, "the ConfigMap's SecRuleEngine On on the Ingress without annotations", status(http.StatusForbidden))
	e.eventually("plain.example.com", "/", "a clean request under the ConfigMap's engine", servedBy("a-1"))
	e.eventuallyProbes("waf.example.com", http.StatusForbidden, "the firewalled Ingress under the ConfigMap's engine")
}
