package watcher

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"

	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestKubeSourceTouchedKeys: after every random change of the informers'
// objects (Ingresses naming Secrets and ConfigMaps of their own and other
// namespaces, those objects, Services, EndpointSlices, the controller
// ConfigMap, namespace labels under a selector), every key the source does
// not name as changed holds what it held in the set before: the watcher,
// which compares only the named keys, misses nothing.
func TestKubeSourceTouchedKeys(t *testing.T) {
	const prefix = "nginx.ingress.kubernetes.io"
	rng := rand.New(rand.NewPCG(3, 4))
	s := newKubeSource(nil, "", "ingress/controller", zap.NewNop()).withAnnotationsPrefix(prefix).
		withDefaultCertificate("ingress/default").withStreamConfigMaps([]string{"ingress/tcp"})
	s.withNamespaceSelector(labels.SelectorFromSet(labels.Set{"served": "yes"}))
	namespaces := []string{"a", "b", "ingress"}
	names := []string{"x", "y", "z"}
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	ref := func() string {
		if rng.IntN(3) == 0 {
			return pick(namespaces) + "/" + pick(names)
		}
		return pick(names)
	}
	meta := func() metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: pick(namespaces), Name: pick(names)} }
	randomObject := func() runtime.Object {
		v := fmt.Sprint(rng.IntN(3))
		switch rng.IntN(7) {
		case 0:
			ing := &networkingv1.Ingress{ObjectMeta: meta()}
			ing.Annotations = map[string]string{prefix + "/auth-secret": ref(), prefix + "/custom-headers": ref(), "v": v}
			if rng.IntN(2) == 0 {
				ing.Spec.TLS = []networkingv1.IngressTLS{{SecretName: pick(names)}}
			}
			return ing
		case 1:
			return &corev1.Secret{ObjectMeta: meta(), StringData: map[string]string{"v": v}}
		case 2:
			return &corev1.ConfigMap{ObjectMeta: meta(), Data: map[string]string{"v": v}}
		case 3:
			data := map[string]string{"allow-cross-namespace-resources": pick([]string{"true", "false"}),
				"add-headers": pick(namespaces) + "/" + pick(names), "ssl-dh-param": pick(namespaces) + "/" + pick(names)}
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ingress", Name: "controller"}, Data: data}
		case 4:
			return &corev1.Service{ObjectMeta: meta(), Spec: corev1.ServiceSpec{ClusterIP: "10.0.0." + v}}
		case 5:
			return &discoveryv1.EndpointSlice{ObjectMeta: meta(), AddressType: discoveryv1.AddressTypeIPv4,
				Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.1.0." + v}}}}
		default:
			return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: pick(namespaces),
				Labels: map[string]string{"served": pick([]string{"yes", "no"})}}}
		}
	}
	apply := func(obj runtime.Object, deleted bool) {
		if _, ok := obj.(*corev1.Namespace); ok {
			s.setNamespace(obj, deleted)
			return
		}
		kind, _ := watchedKind(obj)
		if deleted {
			s.remove(kind, obj)
			return
		}
		cached, err := s.encodeForCache(obj)
		if err != nil {
			t.Fatal(err)
		}
		s.set(kind, cached)
	}
	previous, changed := s.desired()
	if changed != nil {
		t.Fatalf("the first set names %d changed keys, want none (unknown)", len(changed))
	}
	hinted := 0
	for step := range 3000 {
		for range 1 + rng.IntN(3) {
			apply(randomObject(), rng.IntN(5) == 0)
		}
		next, changed := s.desired()
		if changed == nil {
			previous = maps.Clone(next)
			continue
		}
		hinted++
		named := map[string]bool{}
		for _, key := range changed {
			named[key] = true
		}
		for key := range keysOf(previous, next) {
			if !named[key] && string(previous[key]) != string(next[key]) {
				_, had := previous[key]
				_, has := next[key]
				t.Fatalf("step %d: %s changed (present %v → %v) but is not named as changed", step, key, had, has)
			}
		}
		previous = maps.Clone(next) // desired reuses nothing here, but the source may
	}
	if hinted < 1000 {
		t.Errorf("only %d of 3000 sets named their changed keys: the test hardly checks them", hinted)
	}
}

// keysOf is the union of the sets' keys.
func keysOf(sets ...map[string][]byte) map[string]bool {
	out := map[string]bool{}
	for _, set := range sets {
		for key := range set {
			out[key] = true
		}
	}
	return out
}
