package translator

import (
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"switchyard.dev/switchyard/bus"
)

// TestResolveDHParam: ssl-dh-param's Secret is used only when its
// dhparam.pem is one block of DH parameters with a prime of at least
// 2048 bits; anything else is a Problem naming the key, and no
// parameters reach NGINX.
func TestResolveDHParam(t *testing.T) {
	good, err := os.ReadFile("testdata/dhparam2048.pem")
	if err != nil {
		t.Fatal(err)
	}
	weak, err := os.ReadFile("testdata/dhparam1024.pem")
	if err != nil {
		t.Fatal(err)
	}
	secret := func(data []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ingress", Name: "dh"}, Data: map[string][]byte{dhParamKey: data}}
	}
	for _, c := range []struct {
		name    string
		ref     string
		secret  *corev1.Secret
		problem string // a part of the message; "" for none
	}{
		{"no key", "", nil, ""},
		{"good", "ingress/dh", secret(good), ""},
		{"missing Secret", "ingress/dh", nil, "is not found"},
		{"no dhparam.pem", "ingress/dh", &corev1.Secret{Data: map[string][]byte{"other": good}}, "has no dhparam.pem"},
		{"weak prime", "ingress/dh", secret(weak), "a 1024-bit prime"},
		{"a certificate", "ingress/dh", secret([]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")), "not a PEM block of DH PARAMETERS"},
		{"two blocks", "ingress/dh", secret(append(append([]byte{}, good...), good...)), "more than one PEM block"},
		{"garbage inside", "ingress/dh", secret([]byte("-----BEGIN DH PARAMETERS-----\nAAAA\n-----END DH PARAMETERS-----\n")), "do not parse"},
		{"text", "ingress/dh", secret([]byte("ssl_dhparam /etc/passwd;")), "not a PEM block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := bus.DefaultSettings()
			s.SSLDHParam = c.ref
			secrets := map[string]*corev1.Secret{}
			if c.secret != nil {
				secrets["ingress/dh"] = c.secret
			}
			problems := resolveDHParam(&s, secrets)
			if c.problem == "" {
				if len(problems) != 0 {
					t.Fatalf("problems: %v", problems)
				}
				if c.ref != "" && s.SSLDHParamPEM != string(good) {
					t.Fatal("the parameters were not taken")
				}
				return
			}
			if len(problems) != 1 || problems[0].Field != "data.ssl-dh-param" || !strings.Contains(problems[0].Message, c.problem) {
				t.Fatalf("problems %v, want one on data.ssl-dh-param saying %q", problems, c.problem)
			}
			if s.SSLDHParamPEM != "" {
				t.Fatal("bad parameters reach NGINX")
			}
		})
	}
}

// FuzzCheckDHParam: any Secret content is either refused or is one DH
// PARAMETERS block, never a crash.
func FuzzCheckDHParam(f *testing.F) {
	if good, err := os.ReadFile("testdata/dhparam2048.pem"); err == nil {
		f.Add(good)
	}
	f.Add([]byte("-----BEGIN DH PARAMETERS-----\nMAYCAQECAQI=\n-----END DH PARAMETERS-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if checkDHParam(data) == nil && !strings.HasPrefix(strings.TrimSpace(string(data)), "-----BEGIN DH PARAMETERS-----") {
			t.Fatalf("accepted %q", data)
		}
	})
}
