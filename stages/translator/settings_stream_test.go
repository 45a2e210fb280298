package translator

import "switchyard.dev/switchyard/bus"

var streamSettingsCases = map[string]keyCases{
	"proxy-stream-timeout": stringCases("600s", func(s *bus.Settings) *string { return &s.ProxyStreamTimeout },
		[]string{"10s", "1h30m"}, []string{"", "10 s", "1h;", "forever"}),
	"proxy-stream-next-upstream": boolCases(true, func(s *bus.Settings) *bool { return &s.ProxyStreamNextUpstream }),
	"proxy-stream-next-upstream-timeout": stringCases("600s", func(s *bus.Settings) *string { return &s.ProxyStreamNextUpstreamTimeout },
		[]string{"0", "5s"}, []string{"", "5 s", "-1"}),
	"proxy-stream-next-upstream-tries": intCases("3", func(s *bus.Settings) *int { return &s.ProxyStreamNextUpstreamTries },
		[]int{0, 1, 10}, []string{"-1", "x", "101"}),
	"proxy-stream-responses": intCases("1", func(s *bus.Settings) *int { return &s.ProxyStreamResponses },
		[]int{0, 1, 5}, []string{"-1", "many"}),
}
