package translator

import "switchyard.dev/switchyard/bus"

var pathsSettingsCases = map[string]keyCases{
	"strict-validate-path-type": boolCases(true, func(s *bus.Settings) *bool { return &s.StrictValidatePathType }),
}
