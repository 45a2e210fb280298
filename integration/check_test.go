package integration

import (
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"switchyard.dev/switchyard/integration/harness"
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
