package translator

import "switchyard.dev/switchyard/bus"

var modSecuritySettingsCases = map[string]keyCases{
	"enable-modsecurity":           boolCases(false, func(s *bus.Settings) *bool { return &s.EnableModSecurity }),
	"enable-owasp-modsecurity-crs": boolCases(false, func(s *bus.Settings) *bool { return &s.EnableOWASPCoreRules }),
}
