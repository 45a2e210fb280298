package translator

import (
	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// modSecuritySettings are the ModSecurity keys (bus.ModSecuritySettings);
// modsecurity-snippet is read by readModSecuritySnippet.
var modSecuritySettings = map[string]settingParser{
	"enable-modsecurity":           boolSetting(func(s *bus.Settings) *bool { return &s.EnableModSecurity }),
	"enable-owasp-modsecurity-crs": boolSetting(func(s *bus.Settings) *bool { return &s.EnableOWASPCoreRules }),
}

// modSecuritySnippetKey is the ConfigMap's modsecurity-snippet: a snippet,
// refused as the catalog says, unless it is exactly one SecRuleEngine line.
const modSecuritySnippetKey = "modsecurity-snippet"

// readModSecuritySnippet reads modsecurity-snippet's typed value into s;
// false when the value is a real snippet, which stays refused.
func readModSecuritySnippet(s *bus.Settings, value string) bool {
	mode, ok := features.ParseSecRuleEngine(value)
	if ok {
		s.ModSecurityEngine = mode
	}
	return ok
}
