package translator

import "switchyard.dev/switchyard/bus"

var proxyProtocolSettingsCases = map[string]keyCases{
	"use-proxy-protocol": boolCases(false, func(s *bus.Settings) *bool { return &s.UseProxyProtocol }),
	"proxy-protocol-header-timeout": secondsCases("5", func(s *bus.Settings) *int { return &s.ProxyProtocolHeaderTimeout },
		[]int{1, 5, 60}, []string{"0", "-1"}),
}
