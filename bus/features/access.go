package features

// Access is the access plugin's group: which client addresses may reach a
// location (allowlist-source-range, denylist-source-range). The lists are
// canonical CIDRs (ParseCIDRList); NGINX checks $remote_addr, the client
// address after real_ip (use-forwarded-headers, use-proxy-protocol).
type Access struct {
	// Deny is checked first: an address in it gets 403 even when Allow
	// holds it too, as ingress-nginx renders deny rules before allow rules.
	Deny []string `json:"deny,omitempty"`
	// Allow, when set, is the only addresses let through; every other one
	// gets 403.
	Allow []string `json:"allow,omitempty"`
	// SatisfyAny lets a request through when any one of the location's
	// access checks passes (source ranges, basic or external auth) rather
	// than all of them (satisfy: any).
	SatisfyAny bool `json:"satisfyAny,omitempty"`
}

func (a *Access) validate() error {
	if a == nil {
		return nil
	}
	if err := validCIDRs("deny", a.Deny); err != nil {
		return err
	}
	return validCIDRs("allow", a.Allow)
}
