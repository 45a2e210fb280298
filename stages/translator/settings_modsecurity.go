package translator

import "switchyard.dev/switchyard/bus"

// modSecuritySettings are the ModSecurity keys (bus.ModSecuritySettings);
// modsecurity-snippet stays refused (internal/catalog).
var modSecuritySettings = map[string]settingParser{
	"enable-modsecurity":           boolSetting(func(s *bus.Settings) *bool { return &s.EnableModSecurity }),
	"enable-owasp-modsecurity-crs": boolSetting(func(s *bus.Settings) *bool { return &s.EnableOWASPCoreRules }),
}
