package translator

import (
	"reflect"
	"strings"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// appIngress is an Ingress of namespace app with annotations, routing
// <name>.example.com/ to Service web.
func appIngress(name string, annotations map[string]string) *networkingv1.Ingress {
	pt := networkingv1.PathTypePrefix
	return &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: "app", Name: name, Annotations: annotations},
		Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{Host: name + ".example.com",
			IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &pt, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{
					Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}
}

// TestCustomHeaders: the custom-headers annotation's ConfigMap becomes the
// Ingress's CustomHeaders; a missing ConfigMap, one of another namespace or
// an invalid header rejects the Ingress (nothing of it is served); a change
// of the ConfigMap re-plans the Ingress.
func TestCustomHeaders(t *testing.T) {
	cfg := DefaultConfig()
	cfg.WatchWithoutClass = true
	cfg.AnnotationsPrefix = "nginx.ingress.kubernetes.io"
	ing := func(name, ref string) *networkingv1.Ingress {
		return appIngress(name, map[string]string{"nginx.ingress.kubernetes.io/custom-headers": ref})
	}
	tr := NewTranslator(cfg)
	for _, o := range []any{
		headerConfigMap("app", "headers", map[string]string{"X-Frame-Options": "DENY", "Content-Security-Policy": "default-src 'self'"}),
		headerConfigMap("app", "bad", map[string]string{"X-Ok": "1", "X-Evil": "a\nb"}),
		headerConfigMap("other", "headers", map[string]string{"X-Other": "1"}),
		ing("good", "headers"), ing("qualified", "app/headers"), ing("missing", "nope"),
		ing("foreign", "other/headers"), ing("bad", "bad"), ing("garbage", "a b"),
	} {
		tr.Set(o)
	}
	tr.Flush()
	info := func(name string) *bus.IngressInfo { return tr.Model().Ingresses[bus.Key(bus.KindIngress, "app", name)] }
	want := []bus.Header{{Name: "Content-Security-Policy", Value: "default-src 'self'"}, {Name: "X-Frame-Options", Value: "DENY"}}
	for _, name := range []string{"good", "qualified"} {
		if i := info(name); i == nil || i.Rejected || !reflect.DeepEqual(i.CustomHeaders, want) {
			t.Errorf("%s: %+v, want headers %v", name, i, want)
		}
	}
	for name, reason := range map[string]string{"missing": "ConfigMapNotFound", "foreign": "InvalidAnnotation", "bad": "InvalidAnnotation", "garbage": "InvalidAnnotation"} {
		i := info(name)
		if i == nil || !i.Rejected || len(i.Problems) != 1 || i.Problems[0].Reason != reason || len(i.CustomHeaders) != 0 {
			t.Errorf("%s: %+v, want rejected with %s", name, i, reason)
			continue
		}
		if strings.Contains(i.Problems[0].Message, "a\nb") {
			t.Errorf("%s: the message holds the value: %s", name, i.Problems[0].Message)
		}
		for key, s := range tr.Model().Servers {
			if strings.Contains(key, name) && len(s.Locations) > 0 && s.Locations[0].Ingress == "app/"+name {
				t.Errorf("%s: rejected Ingress still has a location on %s", name, key)
			}
		}
	}
	// The missing ConfigMap appears: the Ingress is served.
	tr.Set(headerConfigMap("app", "nope", map[string]string{"X-Late": "1"}))
	tr.Flush()
	if i := info("missing"); i.Rejected || len(i.CustomHeaders) != 1 {
		t.Fatalf("after the ConfigMap appeared: %+v", i)
	}
	// A changed ConfigMap changes the headers.
	tr.Set(headerConfigMap("app", "headers", map[string]string{"X-Frame-Options": "SAMEORIGIN"}))
	tr.Flush()
	if i := info("good"); !reflect.DeepEqual(i.CustomHeaders, []bus.Header{{Name: "X-Frame-Options", Value: "SAMEORIGIN"}}) {
		t.Fatalf("after the change: %+v", i.CustomHeaders)
	}
}

// TestAuthProxySetHeaders: auth-proxy-set-headers' ConfigMap becomes the
// Ingress's AuthProxySetHeaders; a missing ConfigMap, one of another
// namespace or an invalid header keeps the Ingress served but marks the
// headers unusable (its external auth answers 503), with a Problem that
// never holds a value; the ConfigMap appearing re-plans the Ingress.
func TestAuthProxySetHeaders(t *testing.T) {
	cfg := DefaultConfig()
	cfg.WatchWithoutClass = true
	cfg.AnnotationsPrefix = "nginx.ingress.kubernetes.io"
	ing := func(name, ref string) *networkingv1.Ingress {
		return appIngress(name, map[string]string{"nginx.ingress.kubernetes.io/auth-url": "http://auth/", "nginx.ingress.kubernetes.io/auth-proxy-set-headers": ref})
	}
	tr := NewTranslator(cfg)
	for _, o := range []any{
		headerConfigMap("app", "auth", map[string]string{"X-Tenant": "blue", "X-Scope": "read write"}),
		headerConfigMap("app", "bad", map[string]string{"X-Ok": "1", "X-Evil": `a";return 200;"`}),
		headerConfigMap("other", "auth", map[string]string{"X-Other": "1"}),
		ing("good", "auth"), ing("missing", "nope"), ing("foreign", "other/auth"), ing("bad", "bad"),
	} {
		tr.Set(o)
	}
	tr.Flush()
	info := func(name string) *bus.IngressInfo { return tr.Model().Ingresses[bus.Key(bus.KindIngress, "app", name)] }
	want := []bus.Header{{Name: "X-Scope", Value: "read write"}, {Name: "X-Tenant", Value: "blue"}}
	if i := info("good"); i == nil || i.Rejected || i.AuthProxySetHeadersUnusable != "" || !reflect.DeepEqual(i.AuthProxySetHeaders, want) {
		t.Errorf("good: %+v, want headers %v", i, want)
	}
	for name, reason := range map[string]string{"missing": "ConfigMapNotFound", "foreign": "InvalidAnnotation", "bad": "InvalidAnnotation"} {
		i := info(name)
		if i == nil || i.Rejected || i.AuthProxySetHeadersUnusable == "" || len(i.AuthProxySetHeaders) != 0 ||
			len(i.Problems) == 0 || i.Problems[0].Reason != reason || !strings.Contains(i.Problems[0].Message, "503") {
			t.Errorf("%s: %+v, want served, headers unusable, one %s problem saying 503", name, i, reason)
			continue
		}
		if strings.Contains(i.Problems[0].Message, "return 200") {
			t.Errorf("%s: the message holds the value: %s", name, i.Problems[0].Message)
		}
	}
	tr.Set(headerConfigMap("app", "nope", map[string]string{"X-Late": "1"}))
	tr.Flush()
	if i := info("missing"); i.AuthProxySetHeadersUnusable != "" || len(i.AuthProxySetHeaders) != 1 {
		t.Fatalf("after the ConfigMap appeared: %+v", i)
	}
}
