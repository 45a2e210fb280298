package upstream

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/internal/nginx"
	"switchyard.dev/switchyard/plugins"
)

func ingress(a map[string]string, secrets map[string]map[string][]byte) plugins.Ingress {
	return plugins.Ingress{Namespace: "shop", Name: "web", Annotations: a, Secrets: secrets}
}

func TestParse(t *testing.T) {
	ca, _, err := nginx.SelfSignedCertificate("ca", []string{"backend.internal"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, key, _ := nginx.SelfSignedCertificate("client", []string{"client"}, time.Now())
	full := map[string][]byte{"ca.crt": ca, "tls.crt": cert, "tls.key": key}
	secrets := map[string]map[string][]byte{
		"shop/full": full, "shop/ca-only": {"ca.crt": ca}, "shop/client-only": {"tls.crt": cert, "tls.key": key},
		"shop/empty": {"other": []byte("x")}, "shop/garbage": {"ca.crt": []byte("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")},
		"shop/half": {"tls.crt": cert},
	}
	deny := &features.Deny{Status: 503}
	for _, tc := range []struct {
		name     string
		in       map[string]string
		want     *features.Upstream
		wantDeny bool
		errKeys  []string // rejecting errors
		warnKeys []string
	}{
		{name: "nothing", in: map[string]string{}},
		{name: "HTTP is the default", in: map[string]string{KeyBackendProtocol: "HTTP"}},
		{name: "AUTO_HTTP is HTTP", in: map[string]string{KeyBackendProtocol: "auto_http"}},
		{name: "HTTPS any case", in: map[string]string{KeyBackendProtocol: "https"}, want: &features.Upstream{Protocol: "HTTPS"}},
		{name: "GRPC", in: map[string]string{KeyBackendProtocol: "GRPC"}, want: &features.Upstream{Protocol: "GRPC"}},
		{name: "GRPCS", in: map[string]string{KeyBackendProtocol: "GRPCS"}, want: &features.Upstream{Protocol: "GRPCS"}},
		{name: "FCGI with its index", in: map[string]string{KeyBackendProtocol: "fcgi", KeyFastCGIIndex: "index.php"},
			want: &features.Upstream{Protocol: "FCGI", FastCGIIndex: "index.php"}},
		{name: "fastcgi-index without FCGI warns", in: map[string]string{KeyFastCGIIndex: "index.php"}, warnKeys: []string{KeyFastCGIIndex}},
		{name: "fastcgi-index not a file name", in: map[string]string{KeyBackendProtocol: "FCGI", KeyFastCGIIndex: "../x"}, errKeys: []string{KeyFastCGIIndex}},
		{name: "AJP refused", in: map[string]string{KeyBackendProtocol: "AJP"}, errKeys: []string{KeyBackendProtocol}},
		{name: "SNI without a Secret, unlike ingress-nginx", in: map[string]string{KeyBackendProtocol: "HTTPS", KeyServerName: "on", KeyName: "Backend.Internal"},
			want: &features.Upstream{Protocol: "HTTPS", TLS: &features.UpstreamTLS{ServerName: true, Name: "backend.internal"}}},
		{name: "full secret", in: map[string]string{KeyBackendProtocol: "HTTPS", KeySecret: "full", KeyVerify: "on", KeyVerifyDepth: "2",
			KeyCiphers: "HIGH:!aNULL", KeyProtocols: "TLSv1.3  TLSv1.2", KeyName: "backend.internal"},
			want: &features.Upstream{Protocol: "HTTPS", TLS: &features.UpstreamTLS{CAPEM: string(ca), CertPEM: string(cert), KeyPEM: string(key),
				Verify: true, VerifyDepth: 2, Ciphers: "HIGH:!aNULL", Protocols: "TLSv1.3 TLSv1.2", Name: "backend.internal"}}},
		{name: "verify without a name warns (it would check the upstream block's name)", in: map[string]string{KeySecret: "shop/ca-only", KeyVerify: "on"},
			want: &features.Upstream{TLS: &features.UpstreamTLS{CAPEM: string(ca), Verify: true}}, warnKeys: []string{KeyVerify}},
		{name: "client certificate only", in: map[string]string{KeyBackendProtocol: "GRPCS", KeySecret: "client-only"},
			want: &features.Upstream{Protocol: "GRPCS", TLS: &features.UpstreamTLS{CertPEM: string(cert), KeyPEM: string(key)}}},
		{name: "verify without a CA fails closed", in: map[string]string{KeyBackendProtocol: "HTTPS", KeyVerify: "on"}, wantDeny: true, warnKeys: []string{KeyVerify}},
		{name: "verify with a client-only Secret fails closed", in: map[string]string{KeySecret: "client-only", KeyVerify: "on"}, wantDeny: true, warnKeys: []string{KeyVerify}},
		{name: "missing Secret fails closed", in: map[string]string{KeyBackendProtocol: "HTTPS", KeySecret: "nope"}, wantDeny: true, warnKeys: []string{KeySecret}},
		{name: "Secret without certificates fails closed", in: map[string]string{KeySecret: "empty"}, wantDeny: true, warnKeys: []string{KeySecret}},
		{name: "garbage CA fails closed", in: map[string]string{KeySecret: "garbage"}, wantDeny: true, warnKeys: []string{KeySecret}},
		{name: "certificate without key fails closed", in: map[string]string{KeySecret: "half"}, wantDeny: true, warnKeys: []string{KeySecret}},
		{name: "another namespace's Secret not sent fails closed", in: map[string]string{KeySecret: "other/full"}, wantDeny: true, warnKeys: []string{KeySecret}},
		{name: "bad protocols refused", in: map[string]string{KeyProtocols: "TLSv1.4"}, errKeys: []string{KeyProtocols}},
		{name: "depth 0 refused", in: map[string]string{KeyVerifyDepth: "0"}, errKeys: []string{KeyVerifyDepth}},
		{name: "depth over 100 refused", in: map[string]string{KeyVerifyDepth: "101"}, errKeys: []string{KeyVerifyDepth}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, gotDeny, errs := Parse(ingress(tc.in, secrets))
			var errKeys, warnKeys []string
			for _, e := range errs {
				if e.Warning {
					warnKeys = append(warnKeys, e.Key)
				} else {
					errKeys = append(errKeys, e.Key)
				}
				for _, secret := range [][]byte{key, cert, ca} {
					if strings.Contains(e.Message, string(secret[30:60])) {
						t.Errorf("error %q holds secret data", e.Message)
					}
				}
			}
			if !reflect.DeepEqual(errKeys, tc.errKeys) || !reflect.DeepEqual(warnKeys, tc.warnKeys) {
				t.Fatalf("errors %v, warnings %v; want %v, %v (%v)", errKeys, warnKeys, tc.errKeys, tc.warnKeys, errs)
			}
			if (gotDeny != nil) != tc.wantDeny || (gotDeny != nil && gotDeny.Status != deny.Status) {
				t.Fatalf("deny %+v, want %v", gotDeny, tc.wantDeny)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if got != nil {
				if err := (&features.Features{Upstream: got}).Validate(); err != nil {
					t.Errorf("Parse returned what Validate refuses: %v", err)
				}
			}
		})
	}
}

// FuzzParse: Parse never panics, and what it returns always validates.
func FuzzParse(f *testing.F) {
	f.Add("HTTPS", "on", "backend.internal", "TLSv1.2 TLSv1.3", "HIGH", "2")
	f.Add("grpcs", "off", "", "", "", "")
	f.Fuzz(func(t *testing.T, protocol, serverName, name, protocols, ciphers, depth string) {
		in := map[string]string{KeyBackendProtocol: protocol, KeyServerName: serverName, KeyName: name,
			KeyProtocols: protocols, KeyCiphers: ciphers, KeyVerifyDepth: depth}
		got, _, _ := Parse(ingress(in, nil))
		if err := (&features.Features{Upstream: got}).Validate(); err != nil {
			t.Fatalf("%v: returned %+v, which does not validate: %v", in, got, err)
		}
	})
}
