package translator

import "switchyard.dev/switchyard/bus"

var redirectSettingsCases = map[string]keyCases{
	"force-ssl-redirect":      boolCases(false, func(s *bus.Settings) *bool { return &s.ForceSSLRedirect }),
	"preserve-trailing-slash": boolCases(false, func(s *bus.Settings) *bool { return &s.PreserveTrailingSlash }),
	"no-tls-redirect-locations": {def: "/.well-known/acme-challenge",
		valid: []valid{
			{"/.well-known/acme-challenge,/healthz", setStrings(func(s *bus.Settings) *[]string { return &s.NoTLSRedirectLocations }, "/.well-known/acme-challenge", "/healthz")},
			{"", func(s *bus.Settings) { s.NoTLSRedirectLocations = []string{} }},
		},
		invalid: []string{"healthz", "/a b", `/x"`},
	},
}
