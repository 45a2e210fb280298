package translator

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// TestAnnotationSecrets checks that only Secrets an auth-secret annotation
// names (in the Ingress's namespace) are published, and that a change to
// one is published again.
func TestAnnotationSecrets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.WatchWithoutClass = true
	cfg.AnnotationsPrefix = "nginx.ingress.kubernetes.io"
	secret := func(ns, name, v string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{"auth": []byte(v)}}
	}
	ing := func(name, ref string) *networkingv1.Ingress {
		return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name,
			Annotations: map[string]string{"nginx.ingress.kubernetes.io/auth-secret": ref}},
			Spec: networkingv1.IngressSpec{TLS: []networkingv1.IngressTLS{{SecretName: "tls"}}}}
	}
	tr := NewTranslator(cfg)
	for _, o := range []any{secret("app", "users", "a"), secret("app", "tls", "x"), secret("other", "users", "b"),
		ing("one", "users"), ing("two", "other/users")} {
		tr.Set(o)
	}
	tr.Flush()
	got := tr.Model().Secrets
	key := bus.Key(bus.KindSecret, "app", "users")
	if len(got) != 1 || got[key] == nil || string(got[key].Data["auth"]) != "a" {
		t.Fatalf("secrets %v, want only app/users", got)
	}
	tr.Set(secret("app", "users", "changed"))
	d := tr.Flush()
	if s, ok := d.Puts[key].(*bus.Secret); !ok || string(s.Data["auth"]) != "changed" {
		t.Fatalf("changed Secret not published again: %v", d.Puts)
	}
	tr.Delete(secret("app", "users", ""))
	if d := tr.Flush(); len(d.Deletes) == 0 || tr.Model().Secrets[key] != nil {
		t.Fatalf("deleted Secret still published: %v", d.Deletes)
	}
}

// TestCrossNamespaceResources: annotations naming a Secret or ConfigMap of
// another namespace read it only while the controller ConfigMap sets
// allow-cross-namespace-resources; turning the key on or off alone
// re-plans the Ingress, and a change of the foreign Secret is published.
func TestCrossNamespaceResources(t *testing.T) {
	cfg := DefaultConfig()
	cfg.WatchWithoutClass = true
	cfg.AnnotationsPrefix = "nginx.ingress.kubernetes.io"
	cfg.ConfigMap = "ingress/controller"
	secret := func(v string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "users"}, Data: map[string][]byte{"auth": []byte(v)}}
	}
	controller := func(allow string) *corev1.ConfigMap {
		return headerConfigMap("ingress", "controller", map[string]string{"allow-cross-namespace-resources": allow})
	}
	tr := NewTranslator(cfg)
	for _, o := range []any{secret("a"), headerConfigMap("shared", "headers", map[string]string{"X-Shared": "1"}),
		appIngress("web", map[string]string{"nginx.ingress.kubernetes.io/auth-secret": "shared/users",
			"nginx.ingress.kubernetes.io/custom-headers": "shared/headers"})} {
		tr.Set(o)
	}
	secretKey := bus.Key(bus.KindSecret, "shared", "users")
	info := func() *bus.IngressInfo { return tr.Model().Ingresses[bus.Key(bus.KindIngress, "app", "web")] }
	refused := func(step string) {
		t.Helper()
		tr.Flush()
		if tr.Model().Secrets[secretKey] != nil {
			t.Errorf("%s: the other namespace's Secret is published", step)
		}
		i := info()
		if i == nil || !i.Rejected || len(i.Problems) != 1 || !strings.Contains(i.Problems[0].Message, "allow-cross-namespace-resources") ||
			!strings.Contains(i.Problems[0].Message, "shared/headers") || len(i.CustomHeaders) != 0 {
			t.Errorf("%s: %+v, want rejected naming shared/headers and the key", step, i)
		}
	}
	refused("no controller ConfigMap")

	tr.Set(controller("true"))
	tr.Flush()
	if s := tr.Model().Secrets[secretKey]; s == nil || string(s.Data["auth"]) != "a" {
		t.Fatalf("key on: Secret %v, want shared/users published", s)
	}
	if i := info(); i == nil || i.Rejected || len(i.CustomHeaders) != 1 || i.CustomHeaders[0].Name != "X-Shared" {
		t.Fatalf("key on: %+v, want served with the shared headers", i)
	}
	tr.Set(secret("changed"))
	if d := tr.Flush(); d.Puts[secretKey] == nil {
		t.Fatalf("changed foreign Secret not published again: %v", d.Puts)
	}

	tr.Set(controller("false"))
	refused("key turned off")
}
