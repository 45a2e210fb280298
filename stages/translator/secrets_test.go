package translator

import (
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
