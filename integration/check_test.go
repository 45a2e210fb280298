package integration

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/internal/manifest/manifesttest"
)

// ingressNginxClassYAML is the IngressClass an ingress-nginx install has.
const ingressNginxClassYAML = `apiVersion: networking.k8s.io/v1
kind: IngressClass
metadata: {name: nginx}
spec: {controller: k8s.io/ingress-nginx}
`

// checkOutput is the part of check's -o json a user's script reads.
type checkOutput struct {
	Ingresses []struct {
		Namespace, Name, Verdict string
		Problems                 []struct{ Field, Reason, Message string }
	}
	ConfigMap *struct {
		Keys []struct{ Key, Verdict, Reason string }
	}
	Summary struct{ Served, Degraded, Rejected, KeysAsAsked, KeysNotAsAsked int }
}

// runCheck runs switchyard check and returns stdout and its exit code.
func runCheck(t *testing.T, args ...string) (string, int) {
	t.Helper()
	out, err := exec.Command(harness.Binary(t), append([]string{"check"}, args...)...).Output()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("check: %v", err)
	return "", 0
}

// TestCheckSaysWhatWouldBeServedAsAsked: check reads what ingress-nginx
// serves (class nginx by default) and names, per Ingress and per ConfigMap
// key, whether Switchyard serves it as asked; it exits 0 only when all are.
func TestCheckSaysWhatWouldBeServedAsAsked(t *testing.T) {
	dir := t.TempDir()
	nginxClass := func(yaml string) string {
		return strings.Replace(yaml, "ingressClassName: switchyard", "ingressClassName: nginx", 1)
	}
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), ingressNginxClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", 9))
	harness.WriteFile(t, filepath.Join(dir, "clean.yaml"), nginxClass(annotatedIngressYAML("clean", map[string]string{
		"nginx.ingress.kubernetes.io/proxy-body-size":    "50m",
		"nginx.ingress.kubernetes.io/proxy-read-timeout": "3600s",
	})))
	// Another controller's Ingress is none of check's business.
	harness.WriteFile(t, filepath.Join(dir, "theirs.yaml"), annotatedIngressYAML("theirs", map[string]string{
		"nginx.ingress.kubernetes.io/configuration-snippet": "return 200;",
	}))
	harness.WriteFile(t, filepath.Join(dir, "config.yaml"), configMapYAML(map[string]string{"proxy-body-size": "8m", "use-gzip": "true"}))

	out, code := runCheck(t, "--manifests", dir, "--configmap", configMapName)
	if code != 0 || !strings.Contains(out, "served as asked  ingress default/clean") ||
		!strings.Contains(out, "1 Ingress(es): 1 served as asked, 0 served degraded, 0 rejected; ConfigMap keys: 2 implemented, 0 not as asked") {
		t.Fatalf("all served as asked: exit %d\n%s", code, out)
	}

	harness.WriteFile(t, filepath.Join(dir, "degraded.yaml"), nginxClass(annotatedIngressYAML("degraded", map[string]string{
		"nginx.ingress.kubernetes.io/http2-push-preload": "true",
	})))
	harness.WriteFile(t, filepath.Join(dir, "snippet.yaml"), nginxClass(annotatedIngressYAML("snippet", map[string]string{
		"nginx.ingress.kubernetes.io/configuration-snippet": "return 200;",
	})))
	harness.WriteFile(t, filepath.Join(dir, "config.yaml"), configMapYAML(map[string]string{"proxy-body-size": "8m", "http-snippet": "x", "proxy-bdy-size": "1m"}))
	out, code = runCheck(t, "--manifests", dir, "--configmap", configMapName, "-o", "json")
	if code != 1 {
		t.Fatalf("check with a rejected Ingress exited %d, want 1\n%s", code, out)
	}
	var got checkOutput
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out)
	}
	verdicts := map[string]string{}
	reasons := map[string]string{}
	for _, ing := range got.Ingresses {
		verdicts[ing.Name] = ing.Verdict
		for _, p := range ing.Problems {
			reasons[ing.Name] += p.Reason + " "
		}
	}
	want := map[string]string{"clean": "served as asked", "degraded": "served degraded", "snippet": "rejected"}
	if len(verdicts) != len(want) {
		t.Errorf("Ingresses checked: %v, want %v", verdicts, want)
	}
	for name, v := range want {
		if verdicts[name] != v {
			t.Errorf("%s: verdict %q, want %q (problems: %s)", name, verdicts[name], v, reasons[name])
		}
	}
	if !strings.Contains(reasons["degraded"], "AnnotationNotSupported") || !strings.Contains(reasons["snippet"], "AnnotationRefused") {
		t.Errorf("problems: %v", reasons)
	}
	keys := map[string]string{}
	for _, k := range got.ConfigMap.Keys {
		keys[k.Key] = k.Verdict + " " + k.Reason
	}
	for key, v := range map[string]string{"proxy-body-size": "implemented ", "http-snippet": "not as asked Refused", "proxy-bdy-size": "not as asked UnknownKey"} {
		if keys[key] != v {
			t.Errorf("key %s: %q, want %q", key, keys[key], v)
		}
	}
	if s := got.Summary; s.Served != 1 || s.Degraded != 1 || s.Rejected != 1 || s.KeysAsAsked != 1 || s.KeysNotAsAsked != 2 {
		t.Errorf("summary %+v", s)
	}
}

// malformedIngressYAML is an Ingress of class nginx whose backend port
// number is a word: the strict decoder refuses the whole document.
const malformedIngressYAML = `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
  namespace: shop
spec:
  ingressClassName: nginx
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service:
            name: echo-a
            port:
              number: eighty
`

// runCheckAll runs switchyard check and returns stdout, stderr and the
// exit code.
func runCheckAll(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(harness.Binary(t), append([]string{"check"}, args...)...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		code = exit.ExitCode()
	default:
		t.Fatalf("check: %v", err)
	}
	return out.String(), errOut.String(), code
}

// TestCheckMalformedManifest: a document that does not parse is a rejected
// entry naming the file and line, the object and the whole field path, in
// the table and in -o json; check exits non-zero, and does not wait out its
// timeout when nothing else is in scope.
func TestCheckMalformedManifest(t *testing.T) {
	const field = "spec.rules[0].http.paths[0].backend.service.port.number"
	for _, alone := range []bool{false, true} {
		dir := t.TempDir()
		if !alone {
			harness.WriteFile(t, filepath.Join(dir, "class.yaml"), ingressNginxClassYAML)
		}
		harness.WriteFile(t, filepath.Join(dir, "ing.yaml"), malformedIngressYAML)

		start := time.Now()
		out, _, code := runCheckAll(t, "--manifests", dir, "--timeout", "30s")
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("alone=%v: check took %s: it waited for its timeout", alone, took)
		}
		if code == 0 || !strings.Contains(out, "rejected         manifest ing.yaml:18 Ingress shop/web\n") ||
			!strings.Contains(out, "wrong type in "+field+": got a string, want a number") ||
			!strings.Contains(out, "1 manifest document(s) not read") {
			t.Errorf("alone=%v: table, exit %d:\n%s", alone, code, out)
		}

		out, _, code = runCheckAll(t, "--manifests", dir, "--timeout", "30s", "-o", "json")
		var got struct {
			Unparsed []struct{ Source, Kind, Namespace, Name, Field, Verdict, Message string }
			Summary  struct{ Unparsed int }
		}
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatalf("-o json: %v\n%s", err, out)
		}
		if code == 0 || len(got.Unparsed) != 1 || got.Summary.Unparsed != 1 {
			t.Fatalf("alone=%v: -o json, exit %d:\n%s", alone, code, out)
		}
		d := got.Unparsed[0]
		if d.Source != "ing.yaml:18" || d.Kind != "Ingress" || d.Namespace != "shop" || d.Name != "web" ||
			d.Field != field || d.Verdict != "rejected" || !strings.Contains(d.Message, "got a string, want a number") {
			t.Errorf("alone=%v: entry %+v", alone, d)
		}
	}
}

// TestCheckNeverPrintsSecretData: with Secrets an Ingress names (a TLS
// certificate, a basic-auth htpasswd), one of them malformed and one
// Ingress malformed, neither output format, nor the log, holds a value of
// any Secret.
func TestCheckNeverPrintsSecretData(t *testing.T) {
	const marker = manifesttest.SecretMarker
	dir := t.TempDir()
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), ingressNginxClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", 9))
	cert, key := harness.SelfSigned(t, "secure.example.com")
	// The private key's PEM body stands for the secret: no line of it may
	// be printed either.
	keyLine := strings.Split(string(key), "\n")[1]
	tls := strings.Replace(harness.TLSIngressYAML("default", "secure", "secure.example.com", "echo-a", cert, key),
		"ingressClassName: switchyard", "ingressClassName: nginx", 1)
	harness.WriteFile(t, filepath.Join(dir, "tls.yaml"), tls)
	// A TLS Secret whose certificate is not one: the translator's Problem
	// must not quote it.
	harness.WriteFile(t, filepath.Join(dir, "badcert.yaml"), "apiVersion: v1\nkind: Secret\nmetadata: {name: badcert, namespace: default}\n"+
		"type: kubernetes.io/tls\nstringData:\n  tls.crt: "+marker+"\n  tls.key: "+marker+"\n")
	harness.WriteFile(t, filepath.Join(dir, "badcert-ing.yaml"), "apiVersion: networking.k8s.io/v1\nkind: Ingress\n"+
		"metadata: {name: badcert, namespace: default}\nspec:\n  ingressClassName: nginx\n  tls:\n  - {hosts: [badcert.example.com], secretName: badcert}\n"+
		"  rules:\n  - host: badcert.example.com\n    http:\n      paths:\n      - {path: /, pathType: Prefix, backend: {service: {name: echo-a, port: {name: http}}}}\n")
	// A malformed basic-auth Secret (a value that is not base64) and the
	// Ingress that names it.
	harness.WriteFile(t, filepath.Join(dir, "auth.yaml"), "apiVersion: v1\nkind: Secret\nmetadata: {name: basic, namespace: default}\n"+
		"data:\n  auth: "+marker+"!\n")
	harness.WriteFile(t, filepath.Join(dir, "auth-ing.yaml"), strings.Replace(annotatedIngressYAML("auth", map[string]string{
		"nginx.ingress.kubernetes.io/auth-type":   "basic",
		"nginx.ingress.kubernetes.io/auth-secret": "basic",
	}), "ingressClassName: switchyard", "ingressClassName: nginx", 1))
	// A malformed Ingress, its annotation holding the marker.
	harness.WriteFile(t, filepath.Join(dir, "ing.yaml"), strings.Replace(malformedIngressYAML,
		"  namespace: shop\n", "  namespace: shop\n  annotations: {x: "+marker+"}\n", 1))

	for _, format := range []string{"table", "json"} {
		out, errOut, code := runCheckAll(t, "--manifests", dir, "--timeout", "60s", "-o", format)
		if code == 0 || !strings.Contains(out, "ing.yaml") || !strings.Contains(out, "auth.yaml") {
			t.Errorf("-o %s: exit %d, the malformed documents not listed:\n%s", format, code, out)
		}
		for _, secret := range []string{marker, keyLine} {
			if strings.Contains(out, secret) || strings.Contains(errOut, secret) {
				t.Errorf("-o %s prints Secret data %q:\nstdout:\n%s\nstderr:\n%s", format, secret, out, errOut)
			}
		}
	}
}

// TestCheckReportsIngressNginxFlags: ingress-nginx's flags given to check
// (its controller's args) are each listed with what run does with them,
// and a flag run refuses makes check exit non-zero; an implemented one
// counts in the verdicts (a catch-all Ingress under --disable-catch-all).
func TestCheckReportsIngressNginxFlags(t *testing.T) {
	dir := t.TempDir()
	harness.WriteFile(t, filepath.Join(dir, "class.yaml"), ingressNginxClassYAML)
	harness.WriteFile(t, filepath.Join(dir, "svc.yaml"), harness.ServiceYAML("default", "echo-a", 9))
	harness.WriteFile(t, filepath.Join(dir, "clean.yaml"), strings.Replace(annotatedIngressYAML("clean", nil),
		"ingressClassName: switchyard", "ingressClassName: nginx", 1))

	out, code := runCheck(t, "--manifests", dir, "--v=2", "--update-status-on-shutdown=false", "--update-status=false")
	for _, want := range []string{
		"ignored          flag --v=2\n", "as asked         flag --update-status-on-shutdown=false\n",
		"implemented      flag --update-status=false\n", "3 of ingress-nginx's flags given, 0 refused",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if code != 0 {
		t.Errorf("exit %d with no flag refused:\n%s", code, out)
	}

	harness.WriteFile(t, filepath.Join(dir, "catch-all.yaml"), `apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {name: catch-all, namespace: default}
spec:
  ingressClassName: nginx
  defaultBackend: {service: {name: echo-a, port: {number: 9}}}
`)
	out, code = runCheck(t, "--manifests", dir, "--disable-catch-all", "--http-port=80")
	for _, want := range []string{
		"refused          flag --http-port=80\n", "rejected         ingress default/catch-all\n", "CatchAllDisabled",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	if code == 0 {
		t.Errorf("exit 0 with a refused flag:\n%s", out)
	}
}
