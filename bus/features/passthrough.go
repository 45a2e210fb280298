package features

// Passthrough is ssl-passthrough: TLS connections for the Ingress's hosts
// go to the backend of the host's "/" path without being terminated, routed
// by the SNI name (the passthrough plugin's group). It only takes effect
// when the controller runs with --enable-ssl-passthrough, as in
// ingress-nginx; the annotations stage puts it on the server.
type Passthrough struct {
	// Enabled is always true in a returned group: a false value returns no
	// group at all.
	Enabled bool `json:"enabled"`
}
