package translator

import "switchyard.dev/switchyard/bus"

// streamSettings are the TCP and UDP services' keys (bus.StreamSettings).
var streamSettings = map[string]settingParser{
	"proxy-stream-timeout":               patternSetting(func(s *bus.Settings) *string { return &s.ProxyStreamTimeout }, timePattern, timeRule),
	"proxy-stream-next-upstream":         boolSetting(func(s *bus.Settings) *bool { return &s.ProxyStreamNextUpstream }),
	"proxy-stream-next-upstream-timeout": patternSetting(func(s *bus.Settings) *string { return &s.ProxyStreamNextUpstreamTimeout }, timePattern, timeRule),
	"proxy-stream-next-upstream-tries":   intSetting(func(s *bus.Settings) *int { return &s.ProxyStreamNextUpstreamTries }, 0, 100, "tries, 0 is no limit"),
	"proxy-stream-responses":             intSetting(func(s *bus.Settings) *int { return &s.ProxyStreamResponses }, 0, 1000000, "datagrams"),
}
