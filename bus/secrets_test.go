package bus

import (
	"slices"
	"testing"
)

// TestAnnotationRefs: the Secrets and ConfigMaps annotations name, and
// which an Ingress may read with allow-cross-namespace-resources off and on.
func TestAnnotationRefs(t *testing.T) {
	const prefix = "nginx.ingress.kubernetes.io"
	cases := []struct {
		name          string
		annotations   map[string]string
		secrets, maps []string // with the key off
		crossSecrets  []string // with it on
		crossMaps     []string
	}{
		{name: "none", annotations: map[string]string{}},
		{name: "own namespace, short and long",
			annotations: map[string]string{prefix + "/auth-secret": "users", prefix + "/auth-tls-secret": "app/ca", prefix + "/custom-headers": "headers"},
			secrets:     []string{"app/ca", "app/users"}, maps: []string{"app/headers"},
			crossSecrets: []string{"app/ca", "app/users"}, crossMaps: []string{"app/headers"}},
		{name: "another namespace",
			annotations:  map[string]string{prefix + "/proxy-ssl-secret": "shared/ca", prefix + "/fastcgi-params-configmap": "shared/fcgi", prefix + "/auth-proxy-set-headers": " shared/hdr "},
			crossSecrets: []string{"shared/ca"}, crossMaps: []string{"shared/fcgi", "shared/hdr"}},
		{name: "same Secret twice",
			annotations: map[string]string{prefix + "/auth-secret": "s", prefix + "/auth-tls-secret": "app/s"},
			secrets:     []string{"app/s"}, crossSecrets: []string{"app/s"}},
		{name: "not names",
			annotations: map[string]string{prefix + "/auth-secret": "a/b/c", prefix + "/custom-headers": "", prefix + "/auth-tls-secret": "Upper"}},
		{name: "another prefix is not read",
			annotations: map[string]string{"example.com/auth-secret": "users"}},
	}
	for _, c := range cases {
		for _, cross := range []bool{false, true} {
			wantSecrets, wantMaps := c.secrets, c.maps
			if cross {
				wantSecrets, wantMaps = c.crossSecrets, c.crossMaps
			}
			if got := AnnotationSecretRefs("app", c.annotations, prefix, cross); !slices.Equal(got, wantSecrets) {
				t.Errorf("%s, cross %v: Secrets %v, want %v", c.name, cross, got, wantSecrets)
			}
			if got := AnnotationConfigMapRefs("app", c.annotations, prefix, cross); !slices.Equal(got, wantMaps) {
				t.Errorf("%s, cross %v: ConfigMaps %v, want %v", c.name, cross, got, wantMaps)
			}
		}
	}
}

func TestRefAllowed(t *testing.T) {
	cases := []struct {
		namespace, id string
		cross, want   bool
	}{
		{"app", "app/s", false, true},
		{"app", "other/s", false, false},
		{"app", "other/s", true, true},
		{"app", "application/s", false, false}, // a namespace that only starts alike
		{"app", "app/s", true, true},
	}
	for _, c := range cases {
		if got := RefAllowed(c.namespace, c.id, c.cross); got != c.want {
			t.Errorf("RefAllowed(%q, %q, %v) = %v, want %v", c.namespace, c.id, c.cross, got, c.want)
		}
	}
}
