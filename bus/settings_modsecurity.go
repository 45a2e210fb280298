package bus

// ModSecuritySettings are the controller ConfigMap's ModSecurity keys:
// the firewall on every server, as ingress-nginx's http-level
// "modsecurity on" (an Ingress's enable-modsecurity: "false" still turns
// it off for its locations).
type ModSecuritySettings struct {
	// EnableModSecurity is enable-modsecurity, with the default
	// configuration (SecRuleEngine DetectionOnly).
	EnableModSecurity bool `json:"enableModSecurity,omitempty"`
	// EnableOWASPCoreRules is enable-owasp-modsecurity-crs: the OWASP Core
	// Rule Set too, where enable-modsecurity is on.
	EnableOWASPCoreRules bool `json:"enableOWASPCoreRules,omitempty"`
	// ModSecurityEngine is the ConfigMap's modsecurity-snippet when it is
	// exactly one SecRuleEngine line (features.ParseSecRuleEngine): the
	// engine mode of every server enable-modsecurity turns on; "" keeps
	// the configuration's. Any other snippet is refused.
	ModSecurityEngine string `json:"modSecurityEngine,omitempty"`
}
