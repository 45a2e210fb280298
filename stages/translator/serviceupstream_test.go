package translator

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"switchyard.dev/switchyard/bus"
)

// TestServiceUpstreamConfigMapDefault: the ConfigMap's service-upstream is
// the default of the annotation, which wins where an Ingress sets it (as
// ingress-nginx reads it), and a change of the key replans the Ingresses.
func TestServiceUpstreamConfigMapDefault(t *testing.T) {
	const viaVIP, viaEndpoints = "default-web-http.cluster-ip", "default-web-http"
	cases := []struct {
		name string
		data map[string]string
		// backend of endpoints.example.com (no annotation) and of
		// vip.example.com (annotation "true")
		unannotated, annotated string
	}{
		{"no key", nil, viaEndpoints, viaVIP},
		{"key true", map[string]string{"service-upstream": "true"}, viaVIP, viaVIP},
		{"key false", map[string]string{"service-upstream": "false"}, viaEndpoints, viaVIP},
		{"key invalid keeps the default", map[string]string{"service-upstream": "yes"}, viaEndpoints, viaVIP},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.ConfigMap = "ingress/controller"
			snap := loadSnapshot(t, "testdata/service-upstream.yaml")
			snap.ConfigMaps = append(snap.ConfigMaps, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Namespace: "ingress", Name: "controller"}, Data: tc.data})
			m := Translate(cfg, snap)
			if got := rootBackend(t, m.Servers, "endpoints.example.com"); got != tc.unannotated {
				t.Errorf("Ingress without the annotation: backend %q, want %q", got, tc.unannotated)
			}
			if got := rootBackend(t, m.Servers, "vip.example.com"); got != tc.annotated {
				t.Errorf("Ingress with the annotation: backend %q, want %q", got, tc.annotated)
			}
		})
	}
}

// TestServiceUpstreamAnnotationFalseWins: "false" on the Ingress keeps the
// endpoints even when the ConfigMap says true; changing the key replans.
func TestServiceUpstreamAnnotationFalseWins(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ConfigMap = "ingress/controller"
	tr := NewTranslator(cfg)
	snap := loadSnapshot(t, "testdata/service-upstream.yaml")
	for _, o := range append(append(anySlice(snap.IngressClasses), anySlice(snap.Services)...), anySlice(snap.EndpointSlices)...) {
		tr.Set(o)
	}
	for _, ing := range snap.Ingresses {
		if ing.Name == "via-cluster-ip" {
			ing.Annotations["nginx.ingress.kubernetes.io/service-upstream"] = "false"
		}
		tr.Set(ing)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ingress", Name: "controller"}}
	tr.Set(cm)
	tr.Flush()
	if got := rootBackend(t, tr.Model().Servers, "endpoints.example.com"); got != "default-web-http" {
		t.Fatalf("before the key: backend %q", got)
	}
	cm = cm.DeepCopy()
	cm.Data = map[string]string{"service-upstream": "true"}
	tr.Set(cm)
	tr.Flush()
	m := tr.Model()
	if got := rootBackend(t, m.Servers, "endpoints.example.com"); got != "default-web-http.cluster-ip" {
		t.Errorf("the key's change did not replan the Ingress without the annotation: backend %q", got)
	}
	if got := rootBackend(t, m.Servers, "vip.example.com"); got != "default-web-http" {
		t.Errorf("annotation false: backend %q, want the endpoints' default-web-http", got)
	}
}

// rootBackend is the backend of host's "/" location.
func rootBackend(t *testing.T, servers map[string]*bus.Server, host string) string {
	t.Helper()
	s := servers[bus.Key(bus.KindServer, host)]
	if s == nil {
		t.Fatalf("no server %s", host)
	}
	for _, l := range s.Locations {
		if l.Path == "/" {
			return l.Backend
		}
	}
	t.Fatalf("server %s has no / location", host)
	return ""
}
