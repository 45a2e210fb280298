package translator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// TestStrictValidatePathType: a regex Prefix path is refused unless
// strict-validate-path-type is false and the Ingress has use-regex "true";
// even then it must be in the safe regex grammar.
func TestStrictValidatePathType(t *testing.T) {
	for _, tc := range []struct {
		name, path, strict, useRegex string
		served                       bool
	}{
		{"strict by default", "/api/v[0-9]+", "", "true", false},
		{"strict true", "/api/v[0-9]+", "true", "true", false},
		{"not strict, use-regex", "/api/v[0-9]+", "false", "true", true},
		{"not strict, no use-regex", "/api/v[0-9]+", "false", "", false},
		{"not strict, use-regex false", "/api/v[0-9]+", "false", "false", false},
		{"not strict, unsafe regex", "/api/(a+)+$", "false", "true", false},
		{"not strict, a quote", `/api/"x`, "false", "true", false},
		{"a plain path needs nothing", "/api/v1", "true", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ing := hostIngress("default", "app", "app.test")
			ing.Spec.Rules[0].HTTP.Paths[0].Path = tc.path
			if tc.useRegex != "" {
				ing.Annotations = map[string]string{bus.DefaultAnnotationsPrefix + "/use-regex": tc.useRegex}
			}
			snap := hostSnapshot(ing)
			cfg := DefaultConfig()
			cfg.ConfigMap = "switchyard-system/switchyard"
			if tc.strict != "" {
				ns, name, _ := strings.Cut(cfg.ConfigMap, "/")
				snap.ConfigMaps = []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Data: map[string]string{"strict-validate-path-type": tc.strict}}}
			}
			m := Translate(cfg, snap)
			info := m.Ingresses[bus.Key(bus.KindIngress, "default", "app")]
			if info == nil {
				t.Fatal("no IngressInfo")
			}
			if served := !info.Rejected; served != tc.served {
				t.Fatalf("served %v, want %v; problems %+v", served, tc.served, info.Problems)
			}
			if !tc.served && !hasProblem(info.Problems, "spec.rules[0].http.paths[0].path", "") {
				t.Errorf("no problem names the path: %+v", info.Problems)
			}
		})
	}
}
