package translator

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/internal/cputime"
)

// benchObjects is the class and n Ingresses, each with its own host,
// Service and EndpointSlice and five proxy annotations, as the
// integration bench (TestBenchAnnotatedPipeline) has them.
func benchObjects(n int) []any {
	class := "switchyard"
	objs := []any{&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: class},
		Spec: networkingv1.IngressClassSpec{Controller: DefaultConfig().ControllerClass}}}
	prefix := networkingv1.PathTypePrefix
	ann := map[string]string{}
	for _, k := range []string{"proxy-body-size", "proxy-read-timeout", "proxy-send-timeout", "proxy-buffer-size", "upstream-vhost"} {
		ann["nginx.ingress.kubernetes.io/"+k] = "1"
	}
	for i := range n {
		svc, port, ready := fmt.Sprintf("svc-%d", i), "http", true
		objs = append(objs, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: svc, Namespace: "default"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: port, Port: 80}}}})
		objs = append(objs, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: svc + "-1", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Ports:       []discoveryv1.EndpointPort{{Name: &port, Port: new(int32(9000))}},
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		})
		objs = append(objs, &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ing-%d", i), Namespace: "default", Generation: 1, Annotations: ann},
			Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{
				Host: fmt.Sprintf("h%d.bench.test", i),
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
					Path: "/", PathType: &prefix,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: svc,
						Port: networkingv1.ServiceBackendPort{Name: port}}},
				}}}},
			}}},
		})
	}
	return objs
}

// BenchmarkTranslateStart translates 10,000 Ingresses at once, as on a
// controller's start (the bus's encoding left out).
func BenchmarkTranslateStart(b *testing.B) {
	objs := benchObjects(10000)
	cpu := cputime.Process()
	b.ResetTimer()
	for b.Loop() {
		tr := NewTranslator(DefaultConfig())
		for _, o := range objs {
			tr.Set(o)
		}
		if d := tr.Flush(); len(d.Puts) < 30000 {
			b.Fatalf("%d keys put, want a server, backend and info per Ingress", len(d.Puts))
		}
	}
	b.ReportMetric(cputime.PerOp(cpu, b.N), "cpu-ms/op")
}
