package translator

import "switchyard.dev/switchyard/bus"

// proxyProtocolSettings are the client address keys (bus.ProxyProtocolSettings).
var proxyProtocolSettings = map[string]settingParser{
	"use-proxy-protocol":            boolSetting(func(s *bus.Settings) *bool { return &s.UseProxyProtocol }),
	"proxy-protocol-header-timeout": secondsSetting(func(s *bus.Settings) *int { return &s.ProxyProtocolHeaderTimeout }, 1),
	"enable-real-ip":                boolSetting(func(s *bus.Settings) *bool { return &s.EnableRealIP }),
	"forwarded-for-header": patternSetting(func(s *bus.Settings) *string { return &s.ForwardedForHeader },
		bus.ForwardedForHeaderPattern, "a header name: letters, digits and -, 1 to 64 of them"),
}
