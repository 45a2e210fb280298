// Package templates holds the text/templates the renderer turns into
// nginx.conf and one file per server. They are embedded, so the binary
// carries them; the renderer is the only reader.
package templates

import "embed"

// FS holds every *.tmpl file of this folder.
//
//go:embed *.tmpl
var FS embed.FS

// ModSecurityDefault is ModSecurity's configuration where the operator
// gave none (--modsecurity-config): SecRuleEngine DetectionOnly, as in
// ingress-nginx.
//
//go:embed modsecurity_default.conf
var ModSecurityDefault string

// ModSecurityCoreRuleSet loads Debian's OWASP Core Rule Set.
//
//go:embed modsecurity_crs.conf
var ModSecurityCoreRuleSet string

// PassthroughJS is the njs module that picks a TLS passthrough host's
// endpoint per connection (--enable-ssl-passthrough), from the files the
// applier keeps; the renderer ships it next to the stream configuration.
//
//go:embed passthrough.js
var PassthroughJS string
