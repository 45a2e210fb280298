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
		if got, _ := controllerRefs([]byte(c.data)); !slices.Equal(got, c.want) {
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
		if _, got := controllerRefs([]byte(data)); !slices.Equal(got, want) {
			t.Errorf("%s: got %v, want %v", data, got, want)
		}
	}
}

func TestAnnotationConfigMapRefs(t *testing.T) {
	const prefix = "nginx.ingress.kubernetes.io"
	cases := []struct {
		value string
		want  []string
	}{
		{"headers", []string{"app/headers"}},
		{"app/headers", []string{"app/headers"}},
		{"other/headers", nil},
		{"", nil},
	}
	for _, c := range cases {
		got := annotationConfigMapRefs("app", map[string]string{prefix + "/custom-headers": c.value}, prefix)
		if !slices.Equal(got, c.want) {
			t.Errorf("%q: got %v, want %v", c.value, got, c.want)
		}
	}
	if got := annotationConfigMapRefs("app", map[string]string{}, prefix); got != nil {
		t.Errorf("no annotation: %v", got)
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
	got := s.desired()
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
