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
)
