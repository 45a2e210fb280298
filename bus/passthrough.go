package bus

import "regexp"

// KindPassthrough is a TLS passthrough host's endpoints
// (--enable-ssl-passthrough), published by the renderer under
// Key(KindPassthrough, host). The applier keeps them as one file per host
// that NGINX's stream module reads per connection (templates/passthrough.js),
// so an endpoint change never reloads NGINX.
const KindPassthrough = "passthrough"

// PassthroughEndpoints is the value of a KindPassthrough key.
type PassthroughEndpoints struct {
	// Host is the exact, lower-case host name (PassthroughHostPattern).
	Host string `json:"host"`
	// Endpoints are the ready endpoints of the host's "/" backend,
	// "ip:port" ("[ip6]:port"), sorted; none closes its connections.
	Endpoints []string `json:"endpoints"`
}

// PassthroughHostPattern is an exact host name that may be passed through,
// lower case. It names a file of the applier's: "." and ".." never match,
// nor "/". templates/passthrough.js checks each SNI name against the same
// pattern before it reads a file.
var PassthroughHostPattern = regexp.MustCompile(`^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)*[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidPassthroughHost says whether host may be passed through: it matches
// PassthroughHostPattern and has at most 253 characters.
func ValidPassthroughHost(host string) bool {
	return len(host) <= 253 && PassthroughHostPattern.MatchString(host)
}

// PassthroughEndpointPattern is an endpoint as the renderer writes it for
// a passthrough host: an IPv4 or bracketed IPv6 address and a port.
var PassthroughEndpointPattern = regexp.MustCompile(`^([0-9.]+|\[[0-9a-f:.]+\]):[0-9]{1,5}$`)
