package translator

import (
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// forbidden are the characters no host or path may carry into nginx.conf.
const forbidden = ";{}'\"$\\ \t\r\n\x00#`"

// regexConstructs are the uses of "$" and braces a regex path may make.
var regexConstructs = regexp.MustCompile(`\$[)|]|\$$|\{[0-9]{1,3}(,[0-9]{0,3})?\}`)

// FuzzValidateIngress feeds arbitrary hosts and paths through Translate:
// it must not panic, and whatever it accepts holds no forbidden character.
func FuzzValidateIngress(f *testing.F) {
	seeds := []struct{ host, path string }{
		{"shop.example.com", "/"}, {"*.wild.example.com", "/api"}, {"", "/a/b/c"},
		{"evil.com", "/x;} location / {return 200;"}, {"a b", "/"}, {"x.com", "/$host"},
		{"x.com", "/a\nb"}, {"x.com", "/(a|b)+"}, {"x.com", "/s(/|$)(.*)"}, {"x.com", "/a{2,3}$"}, {"x.com", "/a{${host}}"}, {"X.COM", "/%2e%2e"}, {"x.com", "relative"},
		{"uniİ.test", "/"}, {"\u212aelvin.test", "/"}, {"xn--uni-xqa.test", "/"},
	}
	for _, s := range seeds {
		// 3..5: strict-validate-path-type false and use-regex "true".
		for pt := 0; pt < 6; pt++ {
			f.Add(s.host, s.path, uint8(pt))
		}
	}
	f.Fuzz(func(t *testing.T, host, path string, pt uint8) {
		pathType := []networkingv1.PathType{networkingv1.PathTypeExact, networkingv1.PathTypePrefix, networkingv1.PathTypeImplementationSpecific}[pt%3]
		class := "switchyard"
		ing := &networkingv1.Ingress{
			ObjectMeta: metav1.ObjectMeta{Name: "fuzz", Namespace: "default"},
			Spec: networkingv1.IngressSpec{
				IngressClassName: &class,
				Rules: []networkingv1.IngressRule{{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
					Paths: []networkingv1.HTTPIngressPath{{Path: path, PathType: &pathType, Backend: networkingv1.IngressBackend{
						Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
				}}}},
			},
		}
		snap := Snapshot{
			Ingresses:      []*networkingv1.Ingress{ing},
			IngressClasses: []*networkingv1.IngressClass{{ObjectMeta: metav1.ObjectMeta{Name: class}, Spec: networkingv1.IngressClassSpec{Controller: DefaultConfig().ControllerClass}}},
		}
		cfg := DefaultConfig()
		if pt%6 >= 3 {
			cfg.ConfigMap = "switchyard-system/switchyard"
			ing.Annotations = map[string]string{bus.DefaultAnnotationsPrefix + "/use-regex": "true"}
			snap.ConfigMaps = []*corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "switchyard-system", Name: "switchyard"},
				Data: map[string]string{"strict-validate-path-type": "false"}}}
		}
		m := Translate(cfg, snap)
		for _, s := range m.Servers {
			if strings.ContainsAny(s.Hostname, forbidden) {
				t.Fatalf("host %q accepted", s.Hostname)
			}
			// A served name is the written one, only ASCII-lower-cased:
			// no Unicode folding turns another name into it.
			if s.Hostname != bus.DefaultServerName && (!isASCII(host) || s.Hostname != strings.ToLower(host)) {
				t.Fatalf("host %q served as %q", host, s.Hostname)
			}
			for _, l := range s.Locations {
				// A regex path may hold "$" as an anchor and {n,m}
				// repetition, and nothing else forbidden.
				if strings.ContainsAny(regexConstructs.ReplaceAllString(l.Path, ""), forbidden) || !strings.HasPrefix(l.Path, "/") {
					t.Fatalf("path %q accepted", l.Path)
				}
			}
		}
		info := m.Ingresses[bus.Key(bus.KindIngress, "default", "fuzz")]
		if info == nil {
			t.Fatal("the Ingress is not reported")
		}
		if info.Rejected && len(info.Problems) == 0 {
			t.Fatal("rejected without a reason")
		}
	})
}
