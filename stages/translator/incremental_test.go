package translator

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// TestIncrementalMatchesFull applies random changes one at a time and
// checks, after every Flush, that the model built from the deltas alone is
// exactly what a full translation of the same objects gives.
func TestIncrementalMatchesFull(t *testing.T) {
	// Seeds past 20 run with --host-ownership=namespace and Ingresses in
	// two namespaces.
	for seed := uint64(1); seed <= 30; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			w := newWorld(seed)
			inc := NewTranslator(w.cfg)
			mirror := map[string]any{}
			for step := 0; step < 150; step++ {
				obj, deleted := w.randomChange()
				if deleted {
					inc.Delete(obj)
				} else {
					inc.Set(obj)
				}
				delta := inc.Flush()
				for _, k := range delta.Deletes {
					delete(mirror, k)
				}
				for k, v := range delta.Puts {
					mirror[k] = v
				}
				full := Translate(w.cfg, w.snapshot())
				want := modelMap(full)
				if got, exp := encode(t, mirror), encode(t, want); got != exp {
					t.Fatalf("step %d (%T %v deleted=%v): incremental model differs from full\nincremental: %s\nfull: %s",
						step, obj, objectKey(obj), deleted, got, exp)
				}
			}
		})
	}
}

func modelMap(m bus.Model) map[string]any {
	out := map[string]any{}
	for k, v := range m.Servers {
		out[k] = v
	}
	for k, v := range m.Backends {
		out[k] = v
	}
	for k, v := range m.Certificates {
		out[k] = v
	}
	for k, v := range m.Ingresses {
		out[k] = v
	}
	if m.Settings != nil {
		out[bus.SettingsKey] = m.Settings
	}
	return out
}

func encode(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func objectKey(obj any) string {
	if m, ok := obj.(metav1.Object); ok {
		return m.GetNamespace() + "/" + m.GetName()
	}
	return "?"
}

// world is a small universe of objects that a random walk changes: few
// hosts, paths and Services, so Ingresses collide often.
type world struct {
	rng     *rand.Rand
	cfg     Config
	objects map[string]any
}

func newWorld(seed uint64) *world {
	cfg := DefaultConfig()
	cfg.DefaultBackendService = "default/svc-0"
	if seed > 20 {
		cfg.HostOwnership = HostOwnershipNamespace
	}
	return &world{rng: rand.New(rand.NewPCG(seed, 7)), cfg: cfg, objects: map[string]any{}}
}

func (w *world) pick(options ...string) string { return options[w.rng.IntN(len(options))] }

func (w *world) snapshot() Snapshot {
	var s Snapshot
	for _, o := range w.objects {
		s.Add(o)
	}
	return s
}

func (w *world) randomChange() (any, bool) {
	var obj any
	switch w.rng.IntN(6) {
	case 0, 1:
		obj = w.ingress()
	case 2:
		obj = w.service()
	case 3:
		obj = w.slice()
	case 4:
		obj = w.secret()
	default:
		obj = w.class()
	}
	key := fmt.Sprintf("%T/%s", obj, objectKey(obj))
	if _, exists := w.objects[key]; exists && w.rng.IntN(4) == 0 {
		delete(w.objects, key)
		return obj, true
	}
	w.objects[key] = obj
	return obj, false
}

func (w *world) ingress() *networkingv1.Ingress {
	class := "switchyard"
	ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{
		Namespace: "default", Name: w.pick("a", "b", "c", "d", "e"),
		CreationTimestamp: metav1.NewTime(time.Unix(int64(w.rng.IntN(3)), 0)),
	}}
	if w.cfg.HostOwnership == HostOwnershipNamespace {
		ing.Namespace = w.pick("default", "other")
	}
	if w.rng.IntN(5) > 0 {
		ing.Spec.IngressClassName = &class
	}
	if w.rng.IntN(3) == 0 {
		// Canaries attach to other Ingresses' locations, so their changes
		// must reach the hosts of both.
		ing.Annotations = map[string]string{w.cfg.canaryKey(): w.pick("true", "false")}
	}
	if w.rng.IntN(4) == 0 {
		ing.Spec.DefaultBackend = w.backend()
	}
	for i := w.rng.IntN(3); i > 0; i-- {
		rule := networkingv1.IngressRule{Host: w.pick("", "x.test", "y.test", "Z.test")}
		rule.HTTP = &networkingv1.HTTPIngressRuleValue{}
		for j := w.rng.IntN(3); j > 0; j-- {
			pt := []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific}[w.rng.IntN(3)]
			rule.HTTP.Paths = append(rule.HTTP.Paths, networkingv1.HTTPIngressPath{
				Path: w.pick("/", "/a", "/a/", "/b", "/bad;path"), PathType: &pt, Backend: *w.backend()})
		}
		ing.Spec.Rules = append(ing.Spec.Rules, rule)
	}
	if w.rng.IntN(3) == 0 {
		ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{w.pick("x.test", "y.test")}, SecretName: w.pick("tls-0", "tls-1")}}
	}
	return ing
}

func (w *world) backend() *networkingv1.IngressBackend {
	port := networkingv1.ServiceBackendPort{Number: 80}
	if w.rng.IntN(2) == 0 {
		port = networkingv1.ServiceBackendPort{Name: w.pick("http", "grpc")}
	}
	return &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: w.pick("svc-0", "svc-1", "svc-2"), Port: port}}
}

func (w *world) service() *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: w.pick("svc-0", "svc-1", "svc-2")}}
	svc.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}}
	if w.rng.IntN(3) == 0 {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "grpc", Port: 81})
	}
	return svc
}

func (w *world) slice() *discoveryv1.EndpointSlice {
	ready := w.rng.IntN(4) > 0
	port := int32(8000 + w.rng.IntN(3))
	name := w.pick("http", "grpc")
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: w.pick("s-0", "s-1", "s-2", "s-3"),
			Labels: map[string]string{serviceNameLabel: w.pick("svc-0", "svc-1", "svc-2")}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port}},
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{w.pick("10.0.0.1", "10.0.0.2", "10.0.0.3")},
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}
}

func (w *world) secret() *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: w.pick("tls-0", "tls-1")}, Type: corev1.SecretTypeTLS}
	if w.rng.IntN(3) > 0 {
		s.Data = map[string][]byte{corev1.TLSCertKey: testCert, corev1.TLSPrivateKeyKey: testKey}
	}
	return s
}

func (w *world) class() *networkingv1.IngressClass {
	c := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "switchyard"}}
	c.Spec.Controller = w.pick(w.cfg.ControllerClass, "example.com/other")
	return c
}

// A valid key pair for secure.example.com, made for these tests only.
var (
	testCert = []byte(`-----BEGIN CERTIFICATE-----
MIIBsDCCAVagAwIBAgIUCw0/VE5kS1a3xLLbwQ9x8C2DJTswCgYIKoZIzj0EAwIw
HTEbMBkGA1UEAwwSc2VjdXJlLmV4YW1wbGUuY29tMCAXDTI2MTEyMTA1Mjc0N1oY
DzIxMjYxMDI4MDUyNzQ3WjAdMRswGQYDVQQDDBJzZWN1cmUuZXhhbXBsZS5jb20w
WTATBgcqhkjOPQIBBggqhkjOPQMBBwNCAAQ+F+SHfA/H+ZDHHjV1QEwLnc9vYty2
P9lfLVTkkUr+DDRP7GWM+33AQq11nw1cc7xTnZjnk95mKcWXYEprOt/xo3IwcDAd
BgNVHQ4EFgQUQFFikJmtBrHJv/aqYoISzkrlBFcwHwYDVR0jBBgwFoAUQFFikJmt
BrHJv/aqYoISzkrlBFcwDwYDVR0TAQH/BAUwAwEB/zAdBgNVHREEFjAUghJzZWN1
cmUuZXhhbXBsZS5jb20wCgYIKoZIzj0EAwIDSAAwRQIgPBaDaP1F2NTj1r5hL6mr
oLPXBd6dfje2bxPkfUMiE2sCIQD4lwpQeHq7KfjQfkvRDFje5hqnNok/ItEPLlVG
0/XZFw==
-----END CERTIFICATE-----`)
	testKey = []byte(`-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgOhUe9eMIFW4D4tXA
HJaebZR7yaRSEajDeR6rBRM0X6KhRANCAAQ+F+SHfA/H+ZDHHjV1QEwLnc9vYty2
P9lfLVTkkUr+DDRP7GWM+33AQq11nw1cc7xTnZjnk95mKcWXYEprOt/x
-----END PRIVATE KEY-----`)
)
