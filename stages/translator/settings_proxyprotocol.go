package translator

import "switchyard.dev/switchyard/bus"

// headerNameRule is what forwarded-for-header and forwarded-host-header
// take: a name NGINX can also read as part of a variable ($http_...).
const headerNameRule = "a header name: letters, digits and -, 1 to 64 of them"

// proxyProtocolSettings are the client address keys (bus.ProxyProtocolSettings).
var proxyProtocolSettings = map[string]settingParser{
	"use-proxy-protocol":            boolSetting(func(s *bus.Settings) *bool { return &s.UseProxyProtocol }),
	"proxy-protocol-header-timeout": secondsSetting(func(s *bus.Settings) *int { return &s.ProxyProtocolHeaderTimeout }, 1),
	"enable-real-ip":                boolSetting(func(s *bus.Settings) *bool { return &s.EnableRealIP }),
	"forwarded-for-header": patternSetting(func(s *bus.Settings) *string { return &s.ForwardedForHeader },
		bus.ForwardedForHeaderPattern, headerNameRule),
	"forwarded-host-header": patternSetting(func(s *bus.Settings) *string { return &s.ForwardedHostHeader },
		bus.ForwardedForHeaderPattern, headerNameRule),
}
