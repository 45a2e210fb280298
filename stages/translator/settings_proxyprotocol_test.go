package translator

import "switchyard.dev/switchyard/bus"

var proxyProtocolSettingsCases = map[string]keyCases{
	"use-proxy-protocol": boolCases(false, func(s *bus.Settings) *bool { return &s.UseProxyProtocol }),
}
