package translator

import (
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// TestHostsAreValidatedBeforeFolding: a host with a non-ASCII letter that
// Unicode folds to ASCII ('İ' to 'i', the Kelvin sign to 'k') is refused,
// never served under the folded name; IDNA names and upper-case ASCII pass.
func TestHostsAreValidatedBeforeFolding(t *testing.T) {
	cases := []struct {
		name, host string
		tls        bool // the host is in spec.tls instead of a rule
		served     string
	}{
		{name: "ascii", host: "unii.test", served: "unii.test"},
		{name: "upper-case ascii folds", host: "UNII.Test", served: "unii.test"},
		{name: "idna", host: "xn--uni-xqa.test", served: "xn--uni-xqa.test"},
		{name: "dotted capital I", host: "uniİ.test"},
		{name: "kelvin sign", host: "\u212aelvin.test"},
		{name: "long s", host: "\u017fhop.test"},
		{name: "fullwidth", host: "ｅxample.test"},
		{name: "tls dotted capital I", host: "uniİ.test", tls: true},
		{name: "tls kelvin sign", host: "\u212a.test", tls: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ing := hostIngress("default", "web", "unii.test")
			field := "spec.rules[0].host"
			if c.tls {
				ing.Spec.TLS = []networkingv1.IngressTLS{{Hosts: []string{c.host}}}
				field = "spec.tls[0].hosts[0]"
			} else {
				ing.Spec.Rules[0].Host = c.host
			}
			m := Translate(DefaultConfig(), hostSnapshot(ing))
			info := m.Ingresses[bus.Key(bus.KindIngress, "default", "web")]
			if c.served == "" {
				if !info.Rejected || !hasProblem(info.Problems, field, "only ASCII") {
					t.Fatalf("%q not refused on %s: %+v", c.host, field, info)
				}
				for _, s := range m.Servers {
					if s.Hostname != bus.DefaultServerName {
						t.Errorf("%q served as %q", c.host, s.Hostname)
					}
				}
				return
			}
			if info.Rejected {
				t.Fatalf("%q refused: %+v", c.host, info.Problems)
			}
			if _, ok := m.Servers[bus.Key(bus.KindServer, c.served)]; !ok {
				t.Fatalf("%q not served as %q: %v", c.host, c.served, serverNames(m))
			}
		})
	}
}

func hasProblem(problems []bus.Problem, field, text string) bool {
	for _, p := range problems {
		if p.Field == field && strings.Contains(p.Message, text) {
			return true
		}
	}
	return false
}

func serverNames(m bus.Model) []string {
	var out []string
	for _, s := range m.Servers {
		out = append(out, s.Hostname)
	}
	return out
}

// hostIngress is an Ingress of class switchyard serving host on / from
// Service web:80.
func hostIngress(ns, name, host string) *networkingv1.Ingress {
	class := "switchyard"
	prefix := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: networkingv1.IngressSpec{
			IngressClassName: &class,
			Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
				Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
					Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
			}}}},
		},
	}
}

func hostSnapshot(ings ...*networkingv1.Ingress) Snapshot {
	return Snapshot{
		Ingresses: ings,
		IngressClasses: []*networkingv1.IngressClass{{ObjectMeta: metav1.ObjectMeta{Name: "switchyard"},
			Spec: networkingv1.IngressClassSpec{Controller: DefaultConfig().ControllerClass}}},
	}
}
