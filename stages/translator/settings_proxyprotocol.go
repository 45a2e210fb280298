package translator

import "switchyard.dev/switchyard/bus"

// proxyProtocolSettings are the PROXY protocol keys (bus.ProxyProtocolSettings).
var proxyProtocolSettings = map[string]settingParser{
	"use-proxy-protocol":            boolSetting(func(s *bus.Settings) *bool { return &s.UseProxyProtocol }),
	"proxy-protocol-header-timeout": secondsSetting(func(s *bus.Settings) *int { return &s.ProxyProtocolHeaderTimeout }, 1),
}
