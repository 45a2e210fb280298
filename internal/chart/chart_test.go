package chart

import (
	"os"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

const chartDir = "../../deploy/helm/switchyard"

// TestChartIngressNginxKeysAccountedFor: every top-level and controller.*
// key of ingress-nginx's chart values is either one this chart has (and
// reads) or named in the README's list of keys that do not carry over, so
// none is ignored without a word.
func TestChartIngressNginxKeysAccountedFor(t *testing.T) {
	list, err := os.ReadFile("testdata/ingress-nginx-values-keys.txt")
	if err != nil {
		t.Fatal(err)
	}
	valuesYAML, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(valuesYAML, &values); err != nil {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for k, v := range values {
		ours[k] = true
		if k == "controller" {
			for ck := range v.(map[string]any) {
				ours["controller."+ck] = true
			}
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	// The README names a key in backquotes, alone or followed by its
	// sub-keys ("`controller.scope`", "`controller.image.{...}`").
	text := string(readme)
	n := 0
	for _, line := range strings.Split(string(list), "\n") {
		key := strings.TrimSpace(line)
		if key == "" || strings.HasPrefix(key, "#") {
			continue
		}
		n++
		if ours[key] || strings.Contains(text, "`"+key+"`") || strings.Contains(text, "`"+key+".") {
			continue
		}
		t.Errorf("ingress-nginx's %s is neither a key of the chart nor named in the README", key)
	}
	if n < 80 {
		t.Errorf("only %d keys in the list", n)
	}
}

// TestChartRefusesUnsupportedValues: an ingress-nginx value that would
// change how traffic is served, and that the chart does not implement,
// fails the render with a message naming it.
func TestChartRefusesUnsupportedValues(t *testing.T) {
	for _, tc := range []struct{ values, key string }{
		{"controller: {kind: DaemonSet}", "controller.kind"},
		{"controller: {hostNetwork: true}", "controller.hostNetwork"},
		{"controller: {hostPort: {enabled: true}}", "controller.hostPort.enabled"},
		{"controller: {scope: {enabled: true}}", "controller.scope.enabled"},
		{"controller: {customTemplate: {configMapName: t}}", "controller.customTemplate"},
		{"controller: {service: {internal: {enabled: true}}}", "controller.service.internal.enabled"},
		{"controller: {service: {enableHttp: false}}", "controller.service.enableHttp"},
		{"controller: {autoscaling: {enabled: true}}", "controller.autoscaling.enabled"},
		{"defaultBackend: {enabled: true}", "defaultBackend.enabled"},
		{"controller: {addHeaders: {X-A: b}, config: {add-headers: ns/h}}", "controller.config.add-headers"},
		{"mode: split\ncontroller: {hostNetwork: true}", "controller.hostNetwork"},
	} {
		var values map[string]any
		if err := yaml.Unmarshal([]byte(tc.values), &values); err != nil {
			t.Fatal(err)
		}
		_, err := Render(chartDir, "switchyard", "edge", values)
		if err == nil || !strings.Contains(err.Error(), tc.key) {
			t.Errorf("%s: got %v, want a failure naming %s", tc.values, err, tc.key)
		}
	}
	// Their defaults, as an ingress-nginx values file spells them, render.
	var defaults map[string]any
	if err := yaml.Unmarshal([]byte(`controller:
  kind: Deployment
  hostNetwork: false
  hostPort: {enabled: false}
  scope: {enabled: false, namespace: "", namespaceSelector: ""}
  customTemplate: {configMapName: "", configMapKey: ""}
  service: {enableHttp: true, enableHttps: true, internal: {enabled: false}}
  autoscaling: {enabled: false}
  keda: {enabled: false}
defaultBackend: {enabled: false}
`), &defaults); err != nil {
		t.Fatal(err)
	}
	if _, err := Render(chartDir, "switchyard", "edge", defaults); err != nil {
		t.Errorf("ingress-nginx's defaults: %v", err)
	}
}

// TestChartIngressClassByName: ingress-nginx's controller.ingressClassByName
// becomes the flag of the same name.
func TestChartIngressClassByName(t *testing.T) {
	for _, on := range []bool{false, true} {
		out, err := Render(chartDir, "switchyard", "edge", map[string]any{"controller": map[string]any{"ingressClassByName": on}})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(out), "--ingress-class-by-name"); got != on {
			t.Errorf("ingressClassByName %v: the flag is there: %v", on, got)
		}
	}
}
