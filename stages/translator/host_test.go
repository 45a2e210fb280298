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

func TestParseHostOwnership(t *testing.T) {
	for in, want := range map[string]string{"": HostOwnershipAny, "any": HostOwnershipAny, "namespace": HostOwnershipNamespace} {
		if got, err := ParseHostOwnership(in); err != nil || got != want {
			t.Errorf("ParseHostOwnership(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"Namespace", "ns", "strict", " any"} {
		if _, err := ParseHostOwnership(in); err == nil {
			t.Errorf("ParseHostOwnership(%q) accepted", in)
		}
	}
}

// TestHostOwnershipFollowsTheOldestIngress: under --host-ownership=namespace
// the host passes to the next namespace when its owner's last Ingress for
// it goes, and the default mode lets both namespaces share it.
func TestHostOwnershipFollowsTheOldestIngress(t *testing.T) {
	owner := hostIngress("tenant", "app", "app.test")
	owner.CreationTimestamp = metav1.Unix(100, 0)
	other := hostIngress("other", "grab", "app.test")
	other.CreationTimestamp = metav1.Unix(200, 0)
	other.Spec.Rules[0].HTTP.Paths[0].Path = "/grab"
	served := func(m bus.Model) []string {
		var out []string
		for _, l := range m.Servers[bus.Key(bus.KindServer, "app.test")].Locations {
			if l.Ingress != "" {
				out = append(out, l.Ingress)
			}
		}
		return out
	}
	cases := []struct {
		name      string
		ownership string
		ings      []*networkingv1.Ingress
		want      []string // Ingresses serving a location of app.test
		refused   string   // Ingress told the host is another namespace's
	}{
		{"any shares", HostOwnershipAny, []*networkingv1.Ingress{owner, other}, []string{"other/grab", "tenant/app"}, ""},
		{"namespace keeps the oldest", HostOwnershipNamespace, []*networkingv1.Ingress{owner, other}, []string{"tenant/app"}, "other/grab"},
		{"owner gone", HostOwnershipNamespace, []*networkingv1.Ingress{other}, []string{"other/grab"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.HostOwnership = c.ownership
			m := Translate(cfg, hostSnapshot(c.ings...))
			if got := served(m); strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Errorf("app.test served by %v, want %v", got, c.want)
			}
			for key, info := range m.Ingresses {
				refused := hasProblem(info.Problems, "spec.rules[0].host", "belongs to namespace tenant")
				if want := c.refused != "" && key == bus.Key(bus.KindIngress, "other", "grab"); refused != want || info.Rejected {
					t.Errorf("%s: refused %v (rejected %v), want refused %v: %+v", key, refused, info.Rejected, want, info.Problems)
				}
			}
		})
	}
}
