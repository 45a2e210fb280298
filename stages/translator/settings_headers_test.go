package translator

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

func headerConfigMap(ns, name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: data}
}

// TestResolveHeaders: add-headers and proxy-set-headers read the headers
// of the ConfigMaps they name; a missing ConfigMap or one bad header is a
// Problem on the key and none of that ConfigMap's headers is used.
func TestResolveHeaders(t *testing.T) {
	cases := []struct {
		name        string
		data        map[string]string
		wantHeaders map[string]string
		wantReason  string
		wantMsg     string
	}{
		{"valid", map[string]string{"X-Frame-Options": "DENY", "X-Served-By": "switchyard; v1"},
			map[string]string{"X-Frame-Options": "DENY", "X-Served-By": "switchyard; v1"}, "", ""},
		{"empty", map[string]string{}, map[string]string{}, "", ""},
		{"newline", map[string]string{"X-A": "ok", "X-B": "a\r\nSet-Cookie: x"}, nil, ReasonInvalidValue, "header X-B"},
		{"nul", map[string]string{"X-B": "a\x00"}, nil, ReasonInvalidValue, "header X-B"},
		{"variable", map[string]string{"X-B": "$remote_addr"}, nil, ReasonInvalidValue, "header X-B"},
		{"quote", map[string]string{"X-B": `a"; add_header x`}, nil, ReasonInvalidValue, "header X-B"},
		{"brace", map[string]string{"X-B": "}"}, nil, ReasonInvalidValue, "header X-B"},
		{"bad-name", map[string]string{"X B": "v"}, nil, ReasonInvalidValue, `header name "X B" is not an HTTP token`},
		{"name-with-dollar", map[string]string{"X$B": "v"}, nil, ReasonInvalidValue, "not an HTTP token"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := bus.DefaultSettings()
			s.AddHeaders, s.ProxySetHeaders = "ingress/add", "ingress/add"
			problems := resolveHeaders(&s, map[string]*corev1.ConfigMap{"ingress/add": headerConfigMap("ingress", "add", c.data)})
			if !reflect.DeepEqual(s.AddHeaderValues, c.wantHeaders) || !reflect.DeepEqual(s.ProxySetHeaderValues, c.wantHeaders) {
				t.Fatalf("headers %v / %v, want %v", s.AddHeaderValues, s.ProxySetHeaderValues, c.wantHeaders)
			}
			if c.wantReason == "" {
				if len(problems) != 0 {
					t.Fatalf("problems %v", problems)
				}
				return
			}
			if len(problems) != 2 || problems[0].Reason != c.wantReason || problems[0].Field != "data.add-headers" ||
				problems[1].Field != "data.proxy-set-headers" || !strings.Contains(problems[0].Message, c.wantMsg) {
				t.Fatalf("problems %+v, want %s saying %q on both keys", problems, c.wantReason, c.wantMsg)
			}
			for _, v := range c.data {
				if len(v) > 1 && strings.Contains(problems[0].Message, v) {
					t.Fatalf("the message quotes the value: %s", problems[0].Message)
				}
			}
		})
	}
	s := bus.DefaultSettings()
	s.AddHeaders = "ingress/missing"
	if problems := resolveHeaders(&s, nil); len(problems) != 1 || problems[0].Reason != "ConfigMapNotFound" || s.AddHeaderValues != nil {
		t.Fatalf("missing ConfigMap: %+v, headers %v", problems, s.AddHeaderValues)
	}
}

// FuzzCheckHeaders: whatever checkHeaders accepts holds nothing NGINX reads
// as syntax, even quoted.
func FuzzCheckHeaders(f *testing.F) {
	f.Add("X-A", "value")
	f.Add("X-A", "a\nb")
	f.Add("X$A", "v")
	f.Add("X-A", `"; return 200; #`)
	f.Fuzz(func(t *testing.T, name, value string) {
		headers, err := checkHeaders(map[string]string{name: value})
		if err != nil {
			if strings.Contains(err.Error(), value) && len(value) > 8 {
				t.Fatalf("error quotes the value: %v", err)
			}
			return
		}
		for n, v := range headers {
			if strings.ContainsAny(n+v, "\"\\$\r\n\x00{}") || strings.Contains(n, ";") {
				t.Fatalf("accepted %q: %q", n, v)
			}
		}
	})
}
