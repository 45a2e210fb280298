package translator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// limitIngress is an Ingress of class switchyard on host with n Prefix
// paths, each of pathLen bytes at least, created at minute age.
func limitIngress(ns, name, host string, n, pathLen int, age int) *networkingv1.Ingress {
	class, prefix := "switchyard", networkingv1.PathTypePrefix
	var paths []networkingv1.HTTPIngressPath
	for i := range n {
		p := fmt.Sprintf("/%s-%d", name, i)
		if pad := pathLen - len(p); pad > 1 {
			p += "/" + strings.Repeat("x", pad-1)
		}
		paths = append(paths, networkingv1.HTTPIngressPath{Path: p, PathType: &prefix, Backend: networkingv1.IngressBackend{
			Service: &networkingv1.IngressServiceBackend{Name: "svc", Port: networkingv1.ServiceBackendPort{Number: 80}}}})
	}
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(age)*60, 0))},
		Spec: networkingv1.IngressSpec{IngressClassName: &class, Rules: []networkingv1.IngressRule{{Host: host,
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: paths}}}}},
	}
}

func switchyardClass() *networkingv1.IngressClass {
	return &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "switchyard"},
		Spec: networkingv1.IngressClassSpec{Controller: DefaultConfig().ControllerClass}}
}

// TestIngressLimits rejects an Ingress over a size limit, or the watcher's
// stand-in for one over the bus limit, with a Problem naming the limit,
// and keeps serving the others.
func TestIngressLimits(t *testing.T) {
	standIn := limitIngress("big", "huge", "huge.test", 0, 0, 1)
	standIn.Annotations = map[string]string{bus.AnnotationTooLarge: "1321000"}
	cases := []struct {
		name   string
		ing    *networkingv1.Ingress
		reason string
	}{
		{"too many paths", limitIngress("a", "many", "many.test", MaxPathsPerIngress+1, 0, 1), "TooManyPaths"},
		{"path too long", limitIngress("a", "long", "long.test", 1, MaxPathLength+1, 1), "PathTooLong"},
		{"over the bus limit", standIn, "TooLarge"},
		{"at the limits", limitIngress("a", "fits", "fits.test", MaxPathsPerIngress, MaxPathLength, 1), ""},
		{"longest path", limitIngress("a", "longest", "longest.test", 1, MaxPathLength, 1), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			good := limitIngress("good", "web", "good.test", 1, 0, 0)
			m := Translate(DefaultConfig(), Snapshot{Ingresses: []*networkingv1.Ingress{c.ing, good}, IngressClasses: []*networkingv1.IngressClass{switchyardClass()}})
			info := m.Ingresses[bus.Key(bus.KindIngress, c.ing.Namespace, c.ing.Name)]
			if c.reason == "" {
				if info == nil || info.Rejected {
					t.Fatalf("an Ingress within the limits was not served: %v", reasons(info))
				}
				return
			}
			if info == nil || !info.Rejected || info.Problems[len(info.Problems)-1].Reason != c.reason ||
				!strings.Contains(info.Problems[len(info.Problems)-1].Message, "limit") {
				t.Fatalf("want rejected with %s naming the limit, got %v", c.reason, reasons(info))
			}
			if m.Servers[bus.Key(bus.KindServer, c.ing.Spec.Rules[0].Host)] != nil {
				t.Fatal("a rejected Ingress's host is served")
			}
			if m.Servers[bus.Key(bus.KindServer, "good.test")] == nil {
				t.Fatal("the good Ingress is not served")
			}
		})
	}
}

// TestServerLocationBudget adds Ingresses from other namespaces to a host
// until it is over its location budget: the newest is not served there and
// is told why, and the host owner's older Ingresses are kept, also when the
// owner adds paths later.
func TestServerLocationBudget(t *testing.T) {
	owner := limitIngress("tenant", "app", "app.test", 10, 0, 0)
	first := limitIngress("other", "a", "app.test", 900, 0, 1)
	second := limitIngress("other", "b", "app.test", 900, 0, 2)
	third := limitIngress("other", "c", "app.test", 900, 0, 3)
	tr := NewTranslator(DefaultConfig())
	tr.Set(switchyardClass())
	for _, ing := range []*networkingv1.Ingress{owner, first, second, third} {
		tr.Set(ing)
	}
	tr.Flush()
	server := tr.Model().Servers[bus.Key(bus.KindServer, "app.test")]
	served := map[string]int{}
	for _, l := range server.Locations {
		served[l.Ingress]++
	}
	if served["tenant/app"] != 10 || served["other/a"] != 900 || served["other/b"] != 900 || served["other/c"] != 0 {
		t.Fatalf("locations served per Ingress: %v", served)
	}
	if got := reasons(tr.Model().Ingresses[bus.Key(bus.KindIngress, "other", "c")]); got["ServerTooLarge"] != 1 {
		t.Fatalf("the Ingress over the budget was not told: %v", got)
	}

	// The owner grows; being older, it keeps its paths, and the newest
	// foreign Ingress that no longer fits gives way.
	tr.Set(limitIngress("tenant", "app", "app.test", 300, 0, 0))
	tr.Flush()
	served = map[string]int{}
	for _, l := range tr.Model().Servers[bus.Key(bus.KindServer, "app.test")].Locations {
		served[l.Ingress]++
	}
	if served["tenant/app"] != 300 || served["other/a"] != 900 || served["other/b"] != 0 {
		t.Fatalf("after the owner grew: %v", served)
	}
}

// reasons counts an Ingress's problems by reason.
func reasons(info *bus.IngressInfo) map[string]int {
	n := map[string]int{}
	if info != nil {
		for _, p := range info.Problems {
			n[p.Reason]++
		}
	}
	return n
}
