package translator

import (
	"strings"

	"switchyard.dev/switchyard/bus"
)

func streamLogFormatField(s *bus.Settings) *string { return &s.LogFormatStream }
func streamLogPathField(s *bus.Settings) *string   { return &s.StreamAccessLogPath }

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
	"log-format-stream": keyCases{def: bus.DefaultLogFormatStream,
		valid: []valid{
			{`$remote_addr $upstream_addr $status`, setString(streamLogFormatField, `$remote_addr $upstream_addr $status`)},
			{`{"ip": "${remote_addr}", "bytes": $bytes_sent}`, setString(streamLogFormatField, `{"ip": "${remote_addr}", "bytes": $bytes_sent}`)},
		},
		invalid: []string{"", `$`, `${`, `a'b`, `a\b`, "a\nb", `'; error_log /etc/passwd; #`, strings.Repeat("a", 4097)},
	},
	"stream-access-log-path": keyCases{def: "",
		valid: []valid{
			{"/var/log/nginx/stream.log", setString(streamLogPathField, "/var/log/nginx/stream.log")},
			{"", setString(streamLogPathField, "")},
		},
		invalid: []string{"stream.log", "/var/log/../etc/passwd", "/var/log/a;", "/a'b", "/var/log/$host.log"},
	},
	"disable-stream-access-log": boolCases(false, func(s *bus.Settings) *bool { return &s.DisableStreamAccessLog }),
}
