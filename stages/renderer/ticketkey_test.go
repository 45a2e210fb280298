package renderer

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// TestSessionContextCertificateIsDerived: the placeholder certificate of
// a ticket key is the same bytes on every replica (every call), another
// key gives another, and it is a usable key pair.
func TestSessionContextCertificateIsDerived(t *testing.T) {
	keyA, keyB := bytes.Repeat([]byte{1}, 48), bytes.Repeat([]byte{2}, 80)
	certA, privA, err := deriveSessionContextCertificate(keyA)
	if err != nil {
		t.Fatal(err)
	}
	again, privAgain, err := deriveSessionContextCertificate(keyA)
	if err != nil || !bytes.Equal(certA, again) || !bytes.Equal(privA, privAgain) {
		t.Errorf("the same ticket key derived another certificate (%v)", err)
	}
	certB, _, err := deriveSessionContextCertificate(keyB)
	if err != nil || bytes.Equal(certA, certB) {
		t.Errorf("two ticket keys derived the same certificate (%v)", err)
	}
	pair, err := tls.X509KeyPair(certA, privA)
	if err != nil {
		t.Fatalf("not a key pair: %v", err)
	}
	block, _ := pem.Decode(certA)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pair.PrivateKey.(*ecdsa.PrivateKey); !ok || cert.Subject.CommonName != "Switchyard Default Certificate" {
		t.Errorf("certificate %v with key %T", cert.Subject, pair.PrivateKey)
	}
	if bytes.Contains(certA, keyA) || strings.Contains(string(privA), base64.StdEncoding.EncodeToString(keyA)) {
		t.Error("the ticket key appears in the derived files")
	}
}

// TestPlaceholderCertificate: the applier's own pair without a ticket
// key, or with one that does not decode; the derived pair with one.
func TestPlaceholderCertificate(t *testing.T) {
	for _, tc := range []struct{ key, cert string }{
		{"", "../ssl/default.crt"},
		{base64.StdEncoding.EncodeToString(make([]byte, 32)), "../ssl/default.crt"},
		{base64.StdEncoding.EncodeToString(make([]byte, 80)), SessionContextCertFile},
	} {
		s := bus.DefaultSettings()
		s.SSLSessionTicketKey = tc.key
		if cert, _ := placeholderCertificate(s); cert != tc.cert {
			t.Errorf("key of %d chars: %s, want %s", len(tc.key), cert, tc.cert)
		}
	}
}

// TestTicketKeyFilesFollowTheSetting: setting the key publishes its file
// and the derived pair (the key's bytes intact through the bus's JSON);
// removing it deletes all three and nginx.conf loads the applier's pair.
func TestTicketKeyFilesFollowTheSetting(t *testing.T) {
	r := NewRenderer(DefaultConfig())
	files := []string{TicketKeyFile, SessionContextCertFile, SessionContextKeyFile}
	key := append(bytes.Repeat([]byte{0xff}, 47), 0)
	settings := bus.DefaultSettings()
	settings.SSLSessionTicketKey = base64.StdEncoding.EncodeToString(key)
	table := map[string][]byte{}
	put := func(s bus.Settings) { applyOutput(t, table, putSettings(t, r, s)) }
	file := func(path string) (string, bool) {
		data, ok := table[fileKey(path)]
		if !ok {
			return "", false
		}
		var f bus.RenderedFile
		if err := json.Unmarshal(data, &f); err != nil {
			t.Fatal(err)
		}
		return f.Content, true
	}
	put(settings)
	for _, path := range files {
		if _, ok := file(path); !ok {
			t.Errorf("%s not published with the key set", path)
		}
	}
	if got, _ := file(TicketKeyFile); got != string(key) {
		t.Errorf("the key file holds %x, want %x", got, key)
	}
	if conf, _ := file(MainFile); !strings.Contains(conf, `ssl_certificate "`+SessionContextCertFile+`"`) {
		t.Error("nginx.conf does not load the derived certificate")
	}
	put(bus.DefaultSettings())
	for _, path := range files {
		if _, ok := file(path); ok {
			t.Errorf("%s still published without the key", path)
		}
	}
	if conf, _ := file(MainFile); !strings.Contains(conf, `ssl_certificate "../ssl/default.crt"`) || strings.Contains(conf, "ssl_session_ticket_key") {
		t.Error("nginx.conf still uses the ticket key")
	}
}
