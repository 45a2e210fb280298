package authtls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

func TestParse(t *testing.T) {
	ca := selfSigned(t)
	secrets := map[string]map[string][]byte{
		"default/ca":      {"ca.crt": ca},
		"default/no-ca":   {"tls.crt": ca},
		"default/garbage": {"ca.crt": []byte("not a certificate")},
	}
	in := func(a map[string]string) plugins.Ingress {
		return plugins.Ingress{Namespace: "default", Name: "web", Annotations: a, Secrets: secrets}
	}
	for _, tc := range []struct {
		name     string
		in       map[string]string
		want     *features.ClientAuth
		deny     bool
		errKey   string // a rejection on this key
		warnKeys []string
	}{
		{name: "nothing", in: map[string]string{}},
		{name: "options without a Secret warn", in: map[string]string{KeyVerifyClient: "on", KeyMatchCN: "CN=a"},
			warnKeys: []string{KeyVerifyClient, KeyMatchCN}},
		{name: "ingress-nginx defaults", in: map[string]string{KeySecret: "ca"},
			want: &features.ClientAuth{CAPEM: string(ca), Verify: "on", Depth: 1}},
		{name: "every option", in: map[string]string{KeySecret: "default/ca", KeyVerifyClient: "optional", KeyVerifyDepth: "3",
			KeyErrorPage: "https://e.example.com/cert-error", KeyPassCert: "true", KeyMatchCN: "CN=(hello-app|ok|goodbye)"},
			want: &features.ClientAuth{CAPEM: string(ca), Verify: "optional", Depth: 3, ErrorPage: "https://e.example.com/cert-error",
				PassCertificate: true, MatchCN: "CN=(hello-app|ok|goodbye)"}},
		{name: "off", in: map[string]string{KeySecret: "ca", KeyVerifyClient: "off"}},
		{name: "missing Secret fails closed", in: map[string]string{KeySecret: "nope"}, deny: true, warnKeys: []string{KeySecret}},
		{name: "no ca.crt fails closed", in: map[string]string{KeySecret: "no-ca"}, deny: true, warnKeys: []string{KeySecret}},
		{name: "garbage ca.crt fails closed", in: map[string]string{KeySecret: "garbage"}, deny: true, warnKeys: []string{KeySecret}},
		{name: "another namespace not sent fails closed", in: map[string]string{KeySecret: "other/ca"}, deny: true, warnKeys: []string{KeySecret}},
		{name: "depth out of range rejects", in: map[string]string{KeySecret: "ca", KeyVerifyDepth: "0"}, errKey: KeyVerifyDepth},
		{name: "backtracking match-cn rejects", in: map[string]string{KeySecret: "ca", KeyMatchCN: "CN=(a+)+b"}, errKey: KeyMatchCN},
		{name: "not a boolean rejects", in: map[string]string{KeySecret: "ca", KeyPassCert: "yes"}, errKey: KeyPassCert},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, deny, errs := Parse(in(tc.in))
			var warnKeys []string
			rejected := ""
			for _, e := range errs {
				if e.Warning {
					warnKeys = append(warnKeys, e.Key)
				} else {
					rejected = e.Key
				}
			}
			if rejected != tc.errKey || strings.Join(warnKeys, ",") != strings.Join(tc.warnKeys, ",") {
				t.Fatalf("rejected on %q, warnings %v; want %q, %v (%v)", rejected, warnKeys, tc.errKey, tc.warnKeys, errs)
			}
			if (deny != nil) != tc.deny || (deny != nil && deny.Status != 503) {
				t.Errorf("deny %+v, want a 503: %t", deny, tc.deny)
			}
			for _, e := range errs {
				if strings.Contains(e.Message, "BEGIN") || strings.Contains(e.Message, "not a certificate") {
					t.Errorf("an error quotes Secret data: %s", e.Message)
				}
			}
			if tc.want == nil {
				if got != nil {
					t.Errorf("got %+v, want none", got)
				}
				return
			}
			if got == nil || *got != *tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDescribe: the patterns compile as the host compiles them and refuse
// the CVE-2025-1097 values; the Secret key is a SecretRef.
func TestDescribe(t *testing.T) {
	d := New().Describe()
	patterns := map[string]*regexp.Regexp{}
	for _, a := range d.Annotations {
		re, err := regexp.Compile(`^(?:` + a.Pattern + `)$`)
		if err != nil {
			t.Fatalf("%s: %v", a.Key, err)
		}
		patterns[a.Key] = re
		if (a.Key == KeySecret) != a.SecretRef {
			t.Errorf("%s: SecretRef %t", a.Key, a.SecretRef)
		}
	}
	for _, v := range []string{`CN=x"; } location / { return 200`, `CN=$(content_by_lua_block{os.execute("x")})`, `CN=a\b`, "O=org"} {
		if patterns[KeyMatchCN].MatchString(v) {
			t.Errorf("auth-tls-match-cn accepts %q", v)
		}
	}
	if patterns[KeyErrorPage].MatchString("javascript:alert(1)") {
		t.Errorf("auth-tls-error-page accepts javascript:")
	}
}

// FuzzParse: whatever the annotations hold, the result validates.
func FuzzParse(f *testing.F) {
	f.Add("on", "2", "https://e.example.com/x", "true", "CN=(a|b)")
	f.Add("optional_no_ca", "x", "", "no", "CN=((a)")
	ca := selfSigned(f)
	f.Fuzz(func(t *testing.T, verify, depth, page, pass, cn string) {
		got, _, _ := Parse(plugins.Ingress{Namespace: "d", Name: "w",
			Annotations: map[string]string{KeySecret: "ca", KeyVerifyClient: verify, KeyVerifyDepth: depth, KeyErrorPage: page, KeyPassCert: pass, KeyMatchCN: cn},
			Secrets:     map[string]map[string][]byte{"d/ca": {"ca.crt": ca}}})
		if err := (&features.Features{ClientAuth: got}).Validate(); err != nil {
			t.Fatalf("Parse returned a value that does not validate: %v", err)
		}
	})
}

// selfSigned is a CA certificate (PEM) for the Secrets of these tests.
func selfSigned(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
