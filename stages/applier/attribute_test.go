package applier

import (
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/nginx"
)

// TestAttribute traces what nginx -t says to the source comments.
func TestAttribute(t *testing.T) {
	const prefix = "/state/nginx"
	files := map[string]string{
		"nginx.conf": "# source configmap ssl-ciphers rev=aaaaaaaaaaaa\n    ssl_ciphers \"NOPE-CIPHER\";\n" +
			"# source configmap log-format-upstream rev=bbbbbbbbbbbb\n    log_format x '$no_such_var';\n" +
			"# source switchyard\n    pid nginx.pid;\n",
		"servers/a.conf": "# source ingress ns/a rev=cccccccccccc\nserver {\n    # source ingress ns/b rev=dddddddddddd\n    location / {\n        bad on;\n    }\n}\n",
	}
	emerg := func(msg string) string {
		return "2026/11/24 21:27:41 [emerg] 9139#9139: " + msg + "\nnginx: configuration file " + prefix + "/conf.next/nginx.conf test failed"
	}
	tests := []struct {
		name   string
		output string
		want   *bus.Refusal
	}{
		{"a line in a server file", emerg(`unknown directive "bad" in /state/nginx//conf.next/servers/a.conf:5`),
			&bus.Refusal{Kind: "ingress", Name: "ns/b", Rev: "dddddddddddd", Message: `unknown directive "bad"`, File: "servers/a.conf", Line: 5}},
		{"the server header", emerg(`invalid parameter in /state/nginx/conf.next/servers/a.conf:2`),
			&bus.Refusal{Kind: "ingress", Name: "ns/a", Rev: "cccccccccccc", Message: "invalid parameter", File: "servers/a.conf", Line: 2}},
		{"a quoted cipher list", emerg(`SSL_CTX_set_cipher_list("NOPE-CIPHER") failed (SSL: error:0A0000B9:SSL routines::no cipher match)`),
			&bus.Refusal{Kind: "configmap", Name: "ssl-ciphers", Rev: "aaaaaaaaaaaa", Message: `SSL_CTX_set_cipher_list("NOPE-CIPHER") failed (SSL: error:0A0000B9:SSL routines::no cipher match)`, File: "nginx.conf", Line: 2}},
		{"an unknown variable", emerg(`unknown "no_such_var" variable`),
			&bus.Refusal{Kind: "configmap", Name: "log-format-upstream", Rev: "bbbbbbbbbbbb", Message: `unknown "no_such_var" variable`, File: "nginx.conf", Line: 4}},
		{"a line of Switchyard's own", emerg(`bad pid in /state/nginx/conf.next/nginx.conf:6`), nil},
		{"a line before any comment", emerg(`bad in /state/nginx/conf.next/servers/a.conf:0`), nil},
		{"a file that is not ours", emerg(`bad in /etc/nginx/mime.types:3`), nil},
		{"no complaint", "nginx: configuration file test failed", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := attribute(tt.output, prefix, nginx.NextConfDir, files)
			checkAttribution(t, got, ok, tt.want)
		})
	}
}

// checkAttribution compares an attribution with the one wanted (nil: none).
func checkAttribution(t *testing.T, got bus.Refusal, ok bool, want *bus.Refusal) {
	t.Helper()
	if want == nil {
		if ok {
			t.Fatalf("attributed to %+v, want nothing", got)
		}
		return
	}
	if !ok || got != *want {
		t.Fatalf("got %+v (%v), want %+v", got, ok, *want)
	}
}

// FuzzAttribute: whatever NGINX says (it quotes user values), attribution
// never panics and names only sources whose names pass the pattern.
func FuzzAttribute(f *testing.F) {
	f.Add(`2026/11/24 [emerg] 1#1: unknown "x_y" variable`, "# source configmap log-format-upstream rev=bbbbbbbbbbbb\nlog_format x '$x_y';\n")
	f.Add(`2026/11/24 [emerg] 1#1: bad in /p/conf.next/nginx.conf:2`, "# source ingress a/b rev=cccccccccccc\nbad;\n")
	f.Add(`[emerg] 1#1: bind() to 127.0.0.1:9000 failed (98: Address already in use)`,
		"# source services tcp/9000 rev=dddddddddddd\nserver {\n    listen 127.0.0.1:9000 reuseport;\n")
	f.Fuzz(func(t *testing.T, output, conf string) {
		ref, ok := attribute(output, "/p", nginx.NextConfDir, map[string]string{"nginx.conf": conf})
		bindRef, bindOK := attributeBind(output, map[string]string{streamServicesFile: conf})
		for _, r := range []struct {
			ref bus.Refusal
			ok  bool
		}{{ref, ok}, {bindRef, bindOK}} {
			if r.ok && (!bus.SourceNamePattern.MatchString(r.ref.Name) || !bus.RevPattern.MatchString(r.ref.Rev) || strings.ContainsAny(r.ref.Name, " \n")) {
				t.Fatalf("attributed to %+v", r.ref)
			}
		}
	})
}
