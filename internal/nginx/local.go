package nginx

import (
	"fmt"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// Local is what belongs to one data plane rather than to the configuration
// it runs: where this NGINX listens and where its unix sockets are. The
// renderer writes placeholders for them (bus.Placeholder*); Localize fills
// them in, so two appliers on one host can run the same rendered files on
// their own ports, each below its own prefix.
type Local struct {
	HTTP  []string // "127.0.0.1:8080", "[::]:80"
	HTTPS []string
	// ControlSocket is the Lua configuration endpoint's unix socket.
	ControlSocket string
	// TLSSocket and PassthroughSocket are TLS passthrough's unix sockets
	// (empty without --enable-ssl-passthrough).
	TLSSocket, PassthroughSocket string
	// PassthroughDir holds a file of endpoints per TLS passthrough host,
	// which the applier writes and NGINX's workers read (empty without
	// --enable-ssl-passthrough).
	PassthroughDir string
}

// LocalFor is the data plane of the NGINX below prefix that listens on
// http and https: its sockets where the prefix layout keeps them, TLS
// passthrough's and its endpoints directory only with passthrough (in
// InternalDir, which only the workers' user may enter: they connect to
// the sockets and read the endpoints).
func LocalFor(prefix string, http, https []string, passthrough bool) Local {
	l := Local{HTTP: http, HTTPS: https, ControlSocket: ControlSocketFor(prefix)}
	if passthrough {
		dir := filepath.Join(prefix, InternalDir)
		l.TLSSocket, l.PassthroughSocket = filepath.Join(dir, "tls.sock"), filepath.Join(dir, "passthrough.sock")
		l.PassthroughDir = filepath.Join(dir, "passthrough")
	}
	return l
}

// ControlSocketFor is the control socket of the NGINX below prefix.
func ControlSocketFor(prefix string) string {
	return filepath.Join(prefix, ControlDir, "control.sock")
}

var (
	localAddrPattern = regexp.MustCompile(`^(\[[0-9a-fA-F:.]+\]|[0-9A-Za-z.-]+):[0-9]{1,5}$`)
	localPathPattern = regexp.MustCompile(`^[A-Za-z0-9_./-]+$`)
)

// Validate checks every value against a whole-string pattern before any
// of them reaches nginx.conf.
func (l Local) Validate() error {
	if len(l.HTTP) == 0 || len(l.HTTPS) == 0 {
		return fmt.Errorf("listen addresses: need at least one HTTP and one HTTPS address (have %d and %d)", len(l.HTTP), len(l.HTTPS))
	}
	for _, addr := range slices.Concat(l.HTTP, l.HTTPS) {
		if !localAddrPattern.MatchString(addr) {
			return fmt.Errorf("listen address %q is not host:port", addr)
		}
		if _, port, err := net.SplitHostPort(addr); err != nil || !validPort(port) {
			return fmt.Errorf("listen address %q: the port is not 1-65535", addr)
		}
	}
	for name, path := range map[string]string{"control socket": l.ControlSocket, "TLS socket": l.TLSSocket, "passthrough socket": l.PassthroughSocket,
		"passthrough directory": l.PassthroughDir} {
		if path != "" && !localPathPattern.MatchString(path) {
			return fmt.Errorf("%s %q: only letters, digits and _./- may name it", name, path)
		}
	}
	if l.ControlSocket == "" {
		return fmt.Errorf("control socket: no path")
	}
	return nil
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n >= 1 && n <= 65535
}

// The only lines a placeholder is filled in on: the shapes the renderer's
// templates write. Parameters are NGINX listen flags (ssl, http2,
// default_server, reuseport, proxy_protocol, udp, backlog=N, ...).
var (
	addrLine = regexp.MustCompile(`^(\s*listen )(` + bus.PlaceholderHTTPAddr + `|` + bus.PlaceholderHTTPSAddr + `|` +
		bus.PlaceholderHTTPAddrNoIPv6 + `|` + bus.PlaceholderHTTPSAddrNoIPv6 + `)((?: [a-z0-9_=]+)*;)$`)
	hostLine = regexp.MustCompile(`^(\s*listen )(` + bus.PlaceholderHTTPHost + `|` + bus.PlaceholderHTTPHostNoIPv6 +
		`):([0-9]{1,5})((?: [a-z0-9_=]+)*;)$`)
	socketLine = regexp.MustCompile(`^(\s*(?:listen|server) "?unix:)(` + bus.PlaceholderControlSocket + `|` + bus.PlaceholderTLSSocket + `|` +
		bus.PlaceholderPassthroughSocket + `)("?(?: [a-z0-9_=]+)*;)$`)
	portLine = regexp.MustCompile(`^(\s*https_port = ")` + bus.PlaceholderHTTPSPort + `(",)$`)
	dirLine  = regexp.MustCompile(`^(\s*js_var \$switchyard_passthrough_dir ")` + bus.PlaceholderPassthroughDir + `(";)$`)
)

// Localize fills this data plane's values into a rendered file. Lines of
// any other shape are kept as they are.
func (l Local) Localize(content string) string {
	if !strings.Contains(content, "@") {
		return content
	}
	var out strings.Builder
	out.Grow(len(content) + 64)
	for rest := content; rest != ""; {
		line, next, found := strings.Cut(rest, "\n")
		l.localizeLine(&out, line)
		if found {
			out.WriteByte('\n')
		}
		rest = next
	}
	return out.String()
}

func (l Local) localizeLine(out *strings.Builder, line string) {
	if !strings.Contains(line, "@") {
		out.WriteString(line)
		return
	}
	if m := addrLine.FindStringSubmatch(line); m != nil {
		addrs := l.HTTP
		if m[2] == bus.PlaceholderHTTPSAddr || m[2] == bus.PlaceholderHTTPSAddrNoIPv6 {
			addrs = l.HTTPS
		}
		if m[2] == bus.PlaceholderHTTPAddrNoIPv6 || m[2] == bus.PlaceholderHTTPSAddrNoIPv6 {
			addrs = withoutIPv6(addrs)
		}
		writeLines(out, m[1], addrs, m[3])
		return
	}
	if m := hostLine.FindStringSubmatch(line); m != nil {
		var addrs []string
		for _, h := range l.httpHosts() {
			addrs = append(addrs, net.JoinHostPort(h, m[3]))
		}
		if m[2] == bus.PlaceholderHTTPHostNoIPv6 {
			addrs = withoutIPv6(addrs)
		}
		writeLines(out, m[1], addrs, m[4])
		return
	}
	if m := socketLine.FindStringSubmatch(line); m != nil {
		path := map[string]string{bus.PlaceholderControlSocket: l.ControlSocket, bus.PlaceholderTLSSocket: l.TLSSocket,
			bus.PlaceholderPassthroughSocket: l.PassthroughSocket}[m[2]]
		out.WriteString(m[1] + path + m[3])
		return
	}
	if m := portLine.FindStringSubmatch(line); m != nil {
		out.WriteString(m[1] + l.HTTPSPort() + m[2])
		return
	}
	if m := dirLine.FindStringSubmatch(line); m != nil {
		out.WriteString(m[1] + l.PassthroughDir + m[2])
		return
	}
	out.WriteString(line)
}

// writeLines writes prefix+addr+suffix once per address, as one line each
// (no line at all for no address).
func writeLines(out *strings.Builder, prefix string, addrs []string, suffix string) {
	for i, a := range addrs {
		if i > 0 {
			out.WriteByte('\n')
		}
		out.WriteString(prefix + a + suffix)
	}
}

// withoutIPv6 are the addresses whose host is not an IPv6 address
// (disable-ipv6); all of them when none is left, since a server without a
// listen would listen where NGINX's default says.
func withoutIPv6(addrs []string) []string {
	kept := slices.DeleteFunc(slices.Clone(addrs), IsIPv6Addr)
	if len(kept) == 0 {
		return addrs
	}
	return kept
}

// IsIPv6Addr says whether host:port names an IPv6 address ("[::]:80").
func IsIPv6Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && strings.Contains(host, ":")
}

// httpHosts are the distinct hosts of the HTTP addresses, in order.
func (l Local) httpHosts() []string {
	var hosts []string
	for _, addr := range l.HTTP {
		h, _, err := net.SplitHostPort(addr)
		if err == nil && !slices.Contains(hosts, h) {
			hosts = append(hosts, h)
		}
	}
	return hosts
}

// HTTPSPort is what a redirect to HTTPS appends to the host: ":8443", or ""
// when the first HTTPS address is on the default port.
func (l Local) HTTPSPort() string {
	if len(l.HTTPS) == 0 {
		return ""
	}
	if _, port, err := net.SplitHostPort(l.HTTPS[0]); err == nil && port != "443" {
		return ":" + port
	}
	return ""
}

// InternalSockets are the unix sockets NGINX listens on besides the
// control socket: TLS passthrough's, when it is on.
func (l Local) InternalSockets() []string {
	var out []string
	for _, s := range []string{l.TLSSocket, l.PassthroughSocket} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
