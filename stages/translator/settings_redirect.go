package translator

import "switchyard.dev/switchyard/bus"

// redirectSettings are the HTTPS redirect keys next to ssl-redirect
// (bus.RedirectSettings).
var redirectSettings = map[string]settingParser{
	"force-ssl-redirect":      boolSetting(func(s *bus.Settings) *bool { return &s.ForceSSLRedirect }),
	"preserve-trailing-slash": boolSetting(func(s *bus.Settings) *bool { return &s.PreserveTrailingSlash }),
	"no-tls-redirect-locations": setting(func(s *bus.Settings) *[]string { return &s.NoTLSRedirectLocations },
		"a comma-separated list of paths starting with /", parsePathPrefixes, joinWith(",")),
}
