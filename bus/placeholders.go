package bus

// Placeholders stand in the rendered files for what belongs to the data
// plane that runs them rather than to the configuration: the addresses
// NGINX listens on and its unix sockets. The renderer writes them and each
// applier fills them in with its own (internal/nginx Local.Localize), so
// one rendered configuration serves several appliers on one host, each
// with its own ports and state directory.
//
// A placeholder is honoured only where the renderer writes it, at the
// start of a line of one fixed shape (a listen, an upstream server, the
// Lua https_port setting or the passthrough directory's js_var); user
// values never start a line, so the same text inside one is left as it is.
const (
	// PlaceholderHTTPAddr: "listen @HTTP_ADDR@ <params>;" becomes one
	// listen per HTTP address of the applier.
	PlaceholderHTTPAddr = "@HTTP_ADDR@"
	// PlaceholderHTTPSAddr: likewise, one per HTTPS address.
	PlaceholderHTTPSAddr = "@HTTPS_ADDR@"
	// PlaceholderHTTPHost: "listen @HTTP_HOST@:<port> <params>;" becomes
	// one listen per distinct host of the HTTP addresses (the TCP and UDP
	// services listen where HTTP does).
	PlaceholderHTTPHost = "@HTTP_HOST@"
	// PlaceholderControlSocket is the path of the Lua configuration
	// endpoint's unix socket: "listen unix:@CONTROL_SOCKET@;".
	PlaceholderControlSocket = "@CONTROL_SOCKET@"
	// PlaceholderTLSSocket and PlaceholderPassthroughSocket are the paths
	// of the unix sockets of TLS passthrough (the http module's TLS
	// listener and the passthrough stream server), in listen and upstream
	// server lines.
	PlaceholderTLSSocket         = "@TLS_SOCKET@"
	PlaceholderPassthroughSocket = "@PASSTHROUGH_SOCKET@"
	// PlaceholderPassthroughDir is the directory of the TLS passthrough
	// hosts' endpoint files (KindPassthrough), in the stream line
	// `js_var $switchyard_passthrough_dir "@PASSTHROUGH_DIR@";`.
	PlaceholderPassthroughDir = "@PASSTHROUGH_DIR@"
	// PlaceholderHTTPSPort is what ssl-redirect appends to the host, in
	// the Lua line `https_port = "@HTTPS_PORT@",`: ":8443", or "" when the
	// applier's first HTTPS address is on 443.
	PlaceholderHTTPSPort = "@HTTPS_PORT@"
	// The address placeholders without the applier's IPv6 addresses
	// (disable-ipv6): "listen @HTTP_ADDR_NO_IPV6@ ..." is one listen per
	// HTTP address that is not an IPv6 one, and likewise for HTTPS and the
	// hosts. When every address is IPv6, they are all kept: a server
	// without a listen would listen where NGINX's default says.
	PlaceholderHTTPAddrNoIPv6  = "@HTTP_ADDR_NO_IPV6@"
	PlaceholderHTTPSAddrNoIPv6 = "@HTTPS_ADDR_NO_IPV6@"
	PlaceholderHTTPHostNoIPv6  = "@HTTP_HOST_NO_IPV6@"
)

// ListenPlaceholder is the address placeholder p (PlaceholderHTTPAddr,
// PlaceholderHTTPSAddr or PlaceholderHTTPHost) as a listen writes it:
// without the IPv6 addresses when disableIPv6 (the disable-ipv6 key).
func ListenPlaceholder(p string, disableIPv6 bool) string {
	if !disableIPv6 {
		return p
	}
	switch p {
	case PlaceholderHTTPAddr:
		return PlaceholderHTTPAddrNoIPv6
	case PlaceholderHTTPSAddr:
		return PlaceholderHTTPSAddrNoIPv6
	case PlaceholderHTTPHost:
		return PlaceholderHTTPHostNoIPv6
	}
	return p
}
