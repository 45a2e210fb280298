package watcher

import (
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"switchyard.dev/switchyard/bus"
)

func TestControllerConfigMapRefs(t *testing.T) {
	cases := []struct {
		data string
		want []string
	}{
		{`{"data":{"add-headers":"ingress/add","proxy-set-headers":" ingress/proxy "}}`, []string{"ingress/add", "ingress/proxy"}},
		{`{"data":{"add-headers":"no-namespace","proxy-set-headers":"a/b/c"}}`, nil},
		{`{"data":{"use-gzip":"true"}}`, nil},
		{`not json`, nil},
	}
	for _, c := range cases {
		if got := readControllerConfig([]byte(c.data)).configMaps; !slices.Equal(got, c.want) {
			t.Errorf("%s: got %v, want %v", c.data, got, c.want)
		}
	}
}

func TestControllerSecretRefs(t *testing.T) {
	for data, want := range map[string][]string{
		`{"data":{"ssl-dh-param":" ingress/dh "}}`: {"ingress/dh"},
		`{"data":{"ssl-dh-param":"dh"}}`:           nil,
		`{"data":{"ssl-dh-param":"a/b/c"}}`:        nil,
		`{"data":{}}`:                              nil,
		`not json`:                                 nil,
	} {
		if got := readControllerConfig([]byte(data)).secrets; !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", data, got, want)
		}
	}
}

func TestControllerCrossNamespace(t *testing.T) {
	for data, want := range map[string]bool{
		`{"data":{"allow-cross-namespace-resources":"true"}}`:   true,
		`{"data":{"allow-cross-namespace-resources":" True "}}`: true,
		`{"data":{"allow-cross-namespace-resources":"1"}}`:      true,
		`{"data":{"allow-cross-namespace-resources":"false"}}`:  false,
		`{"data":{"allow-cross-namespace-resources":"yes"}}`:    false, // invalid: the translator keeps the default
		`{"data":{}}`: false,
		`not json`:    false,
	} {
		if got := readControllerConfig([]byte(data)).crossNamespace; got != want {
			t.Errorf("%s: got %v, want %v", data, got, want)
		}
	}
}

// TestKubeSourceForwardsHeaderConfigMaps: in a cluster, the ConfigMaps an
// Ingress's custom-headers names and those the controller ConfigMap's
// add-headers and proxy-set-headers name are published; other ConfigMaps
// are not.
func TestKubeSourceForwardsHeaderConfigMaps(t *testing.T) {
	s := newKubeSource(nil, "", "ingress/controller", zap.NewNop()).withAnnotationsPrefix("nginx.ingress.kubernetes.io")
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web",
		Annotations: map[string]string{"nginx.ingress.kubernetes.io/custom-headers": "headers"}}}
	cm := func(ns, name string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
	}
	for _, obj := range []runtime.Object{ing,
		cm("app", "headers", map[string]string{"X-A": "1"}), cm("app", "unrelated", nil),
		cm("ingress", "controller", map[string]string{"add-headers": "ingress/add"}), cm("ingress", "add", map[string]string{"X-B": "2"}),
	} {
		cached, err := s.encodeForCache(obj)
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := watchedKind(obj)
		s.set(kind, cached)
	}
	got, _ := s.desired()
	for _, want := range []string{"app/headers", "ingress/controller", "ingress/add"} {
		ns, name, _ := strings.Cut(want, "/")
		if _, ok := got[bus.ObjectKey(bus.ObjectConfigMap, ns, name)]; !ok {
			t.Errorf("ConfigMap %s not published", want)
		}
	}
	if _, ok := got[bus.ObjectKey(bus.ObjectConfigMap, "app", "unrelated")]; ok {
		t.Error("an unrelated ConfigMap is published")
	}
}

// TestKubeSourceForwardsCrossNamespaceRefs: a Secret and a ConfigMap of
// another namespace that an Ingress's annotations name are published only
// while the controller ConfigMap sets allow-cross-namespace-resources, and
// a change of that key alone changes what is published.
func TestKubeSourceForwardsCrossNamespaceRefs(t *testing.T) {
	const prefix = "nginx.ingress.kubernetes.io"
	s := newKubeSource(nil, "", "ingress/controller", zap.NewNop()).withAnnotationsPrefix(prefix)
	put := func(obj runtime.Object) {
		cached, err := s.encodeForCache(obj)
		if err != nil {
			t.Fatal(err)
		}
		kind, _ := watchedKind(obj)
		s.set(kind, cached)
	}
	put(&networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "web", Annotations: map[string]string{
		prefix + "/auth-secret": "shared/users", prefix + "/custom-headers": "shared/headers", prefix + "/proxy-ssl-secret": "own-ca"}}})
	put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "users"}})
	put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "unnamed"}})
	put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: "own-ca"}})
	put(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shared", Name: "headers"}})
	foreign := []string{bus.ObjectKey(bus.ObjectSecret, "shared", "users"), bus.ObjectKey(bus.ObjectConfigMap, "shared", "headers")}
	own := bus.ObjectKey(bus.ObjectSecret, "app", "own-ca")
	for _, c := range []struct {
		setting     string
		wantForeign bool
	}{{"", false}, {"true", true}, {"false", false}} {
		put(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ingress", Name: "controller"},
			Data: map[string]string{"allow-cross-namespace-resources": c.setting}})
		got, _ := s.desired()
		for _, key := range foreign {
			if _, ok := got[key]; ok != c.wantForeign {
				t.Errorf("allow-cross-namespace-resources %q: %s published %v, want %v", c.setting, key, ok, c.wantForeign)
			}
		}
		if _, ok := got[own]; !ok {
			t.Errorf("allow-cross-namespace-resources %q: the Ingress's own Secret is not published", c.setting)
		}
		if _, ok := got[bus.ObjectKey(bus.ObjectSecret, "shared", "unnamed")]; ok {
			t.Errorf("allow-cross-namespace-resources %q: a Secret no Ingress names is published", c.setting)
		}
	}
}
