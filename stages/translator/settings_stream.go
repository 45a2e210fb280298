package translator

import "switchyard.dev/switchyard/bus"

// streamSettings are the TCP and UDP services' keys (bus.StreamSettings).
var streamSettings = map[string]settingParser{
	"proxy-stream-timeout":               patternSetting(func(s *bus.Settings) *string { return &s.ProxyStreamTimeout }, timePattern, timeRule),
	"proxy-stream-next-upstream":         boolSetting(func(s *bus.Settings) *bool { return &s.ProxyStreamNextUpstream }),
	"proxy-stream-next-upstream-timeout": patternSetting(func(s *bus.Settings) *string { return &s.ProxyStreamNextUpstreamTimeout }, timePattern, timeRule),
	"proxy-stream-next-upstream-tries":   intSetting(func(s *bus.Settings) *int { return &s.ProxyStreamNextUpstreamTries }, 0, 100, "tries, 0 is no limit"),
	"proxy-stream-responses":             intSetting(func(s *bus.Settings) *int { return &s.ProxyStreamResponses }, 0, 1000000, "datagrams"),
	// The stream access log: the same checks as the http one's keys.
	"log-format-stream": setting(func(s *bus.Settings) *string { return &s.LogFormatStream },
		logFormatRule, parseLogFormat, identity),
	"stream-access-log-path": setting(func(s *bus.Settings) *string { return &s.StreamAccessLogPath },
		"an absolute file path of 1 to 1024 characters from A-Z a-z 0-9 . _ - / without \"..\", or empty for access-log-path's",
		parseLogPath, identity),
	"disable-stream-access-log": boolSetting(func(s *bus.Settings) *bool { return &s.DisableStreamAccessLog }),
}
