package nginx

import (
	"strings"
	"testing"
)

func TestLocalize(t *testing.T) {
	two := Local{HTTP: []string{"127.0.0.1:8080", "[::1]:8080", "127.0.0.1:9080"}, HTTPS: []string{"127.0.0.1:443"},
		ControlSocket: "/s/control/control.sock", TLSSocket: "/s/internal/tls.sock", PassthroughSocket: "/s/internal/passthrough.sock",
		PassthroughDir: "/s/internal/passthrough"}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a listen per HTTP address, flags kept", "server {\n    listen @HTTP_ADDR@ default_server reuseport;\n}\n",
			"server {\n    listen 127.0.0.1:8080 default_server reuseport;\n    listen [::1]:8080 default_server reuseport;\n    listen 127.0.0.1:9080 default_server reuseport;\n}\n"},
		{"HTTPS", "  listen @HTTPS_ADDR@ ssl http2;", "  listen 127.0.0.1:443 ssl http2;"},
		{"services on each distinct host", "    listen @HTTP_HOST@:5432 proxy_protocol;\n",
			"    listen 127.0.0.1:5432 proxy_protocol;\n    listen [::1]:5432 proxy_protocol;\n"},
		{"without IPv6 (disable-ipv6)", "    listen @HTTP_ADDR_NO_IPV6@ default_server;\n",
			"    listen 127.0.0.1:8080 default_server;\n    listen 127.0.0.1:9080 default_server;\n"},
		{"HTTPS without IPv6, none to leave out", "  listen @HTTPS_ADDR_NO_IPV6@ ssl;", "  listen 127.0.0.1:443 ssl;"},
		{"services without IPv6", "    listen @HTTP_HOST_NO_IPV6@:5432;\n", "    listen 127.0.0.1:5432;\n"},
		{"control socket", "        listen unix:@CONTROL_SOCKET@;", "        listen unix:/s/control/control.sock;"},
		{"quoted upstream socket", `    server "unix:@TLS_SOCKET@";`, `    server "unix:/s/internal/tls.sock";`},
		{"passthrough listen", `    listen "unix:@PASSTHROUGH_SOCKET@" proxy_protocol;`, `    listen "unix:/s/internal/passthrough.sock" proxy_protocol;`},
		{"passthrough directory", `    js_var $switchyard_passthrough_dir "@PASSTHROUGH_DIR@";`, `    js_var $switchyard_passthrough_dir "/s/internal/passthrough";`},
		{"not another js_var", `    js_var $other "@PASSTHROUGH_DIR@";`, `    js_var $other "@PASSTHROUGH_DIR@";`},
		{"https port on 443 is empty", `            https_port = "@HTTPS_PORT@",`, `            https_port = "",`},
		// Only the renderer's own line shapes are filled in: the same text
		// elsewhere (a user's header value, say) stays as it is.
		{"not in a value", `    add_header "X" "@HTTP_ADDR@";`, `    add_header "X" "@HTTP_ADDR@";`},
		{"not after other words", `    listen @HTTP_ADDR@ "x";`, `    listen @HTTP_ADDR@ "x";`},
		{"not a named location", "    location @switchyard_router {", "    location @switchyard_router {"},
		{"nothing to fill", "events {}\n", "events {}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := two.Localize(tc.in); got != tc.want {
				t.Errorf("Localize(%q)\n got %q\nwant %q", tc.in, got, tc.want)
			}
		})
	}
	// disable-ipv6 never leaves a server without a listen.
	onlyIPv6 := Local{HTTP: []string{"[::]:80"}, HTTPS: []string{"[::]:443"}}
	if got, want := onlyIPv6.Localize("listen @HTTP_ADDR_NO_IPV6@;\nlisten @HTTPS_ADDR_NO_IPV6@ ssl;"), "listen [::]:80;\nlisten [::]:443 ssl;"; got != want {
		t.Errorf("only IPv6 addresses, without IPv6: got %q, want %q", got, want)
	}
	if got := (Local{HTTPS: []string{"[::]:8443"}}).HTTPSPort(); got != ":8443" {
		t.Errorf("HTTPSPort = %q, want :8443", got)
	}
}

func TestLocalValidate(t *testing.T) {
	good := Local{HTTP: []string{"0.0.0.0:80"}, HTTPS: []string{"[::]:443"}, ControlSocket: "/run/sy/control.sock"}
	if err := good.Validate(); err != nil {
		t.Fatalf("good: %v", err)
	}
	for _, tc := range []struct {
		name  string
		edit  func(*Local)
		words string
	}{
		{"no HTTP address", func(l *Local) { l.HTTP = nil }, "at least one HTTP"},
		{"a space in an address", func(l *Local) { l.HTTP = []string{"127.0.0.1:80 ssl"} }, "not host:port"},
		{"port 0", func(l *Local) { l.HTTPS = []string{"127.0.0.1:0"} }, "1-65535"},
		{"port 70000", func(l *Local) { l.HTTPS = []string{"127.0.0.1:70000"} }, "1-65535"},
		{"a semicolon in a socket", func(l *Local) { l.TLSSocket = "/x;y" }, "TLS socket"},
		{"a quote in the passthrough directory", func(l *Local) { l.PassthroughDir = `/x"y` }, "passthrough directory"},
		{"no control socket", func(l *Local) { l.ControlSocket = "" }, "control socket"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := good
			tc.edit(&l)
			if err := l.Validate(); err == nil || !strings.Contains(err.Error(), tc.words) {
				t.Errorf("Validate() = %v, want an error saying %q", err, tc.words)
			}
		})
	}
}
