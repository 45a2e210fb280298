package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/stages/renderer"
)

// TestRenderRedactsSecretDerivedFiles: render prints htpasswd files (and
// certificates) without any of their Secret-derived content.
func TestRenderRedactsSecretDerivedFiles(t *testing.T) {
	const hash = "$apr1$abcdefgh$5VEbMkemELfbhC5ck.U.z1"
	basic := &bus.BasicAuth{Users: []string{"alice:" + hash}}
	file := func(path, content string) []byte {
		data, _ := json.Marshal(bus.RenderedFile{Path: path, Content: content})
		return data
	}
	cert, _ := json.Marshal(map[string]any{"hosts": []string{"secure.test"}, "pem": "-----BEGIN PRIVATE KEY-----\nsecret\n"})
	entries := map[string][]byte{
		bus.Key(bus.KindFile, "nginx.conf"):                   file("nginx.conf", "http {}\n"),
		bus.Key(bus.KindFile, renderer.AuthFile(basic)):       file(renderer.AuthFile(basic), renderer.HtpasswdFile(basic)),
		bus.Key(bus.KindCertificate, "default", "secure-tls"): cert,
		bus.Key(bus.KindFile, "servers/secure_2etest.conf"):   file("servers/secure_2etest.conf", "server {}\n"),
	}
	out, err := renderArchive(entries)
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, secret := range []string{hash, "abcdefgh", "alice:", "PRIVATE KEY"} {
		if strings.Contains(text, secret) {
			t.Errorf("render printed %q:\n%s", secret, text)
		}
	}
	want := "-- " + renderer.AuthFile(basic) + " --\n<redacted: " + strconv.Itoa(len(renderer.HtpasswdFile(basic))) + " bytes of secret-derived content>\n"
	for _, w := range []string{want, "-- nginx.conf --\nhttp {}\n", "secure.test"} {
		if !strings.Contains(text, w) {
			t.Errorf("render output lacks %q:\n%s", w, text)
		}
	}
}
