package translator

import (
	"strings"

	"switchyard.dev/switchyard/bus"
)

var proxyProtocolSettingsCases = map[string]keyCases{
	"use-proxy-protocol": boolCases(false, func(s *bus.Settings) *bool { return &s.UseProxyProtocol }),
	"enable-real-ip":     boolCases(false, func(s *bus.Settings) *bool { return &s.EnableRealIP }),
	"forwarded-for-header": {def: "X-Forwarded-For",
		valid:   []valid{{"CF-Connecting-IP", setString(func(s *bus.Settings) *string { return &s.ForwardedForHeader }, "CF-Connecting-IP")}},
		invalid: []string{"", "X_Real", "X-Real;", "proxy_protocol x"},
	},
	"forwarded-host-header": {def: "X-Forwarded-Host",
		valid:   []valid{{"X-Original-Host", setString(func(s *bus.Settings) *string { return &s.ForwardedHostHeader }, "X-Original-Host")}},
		invalid: []string{"", "X_Host", "X-Host;", "X-Host $x", "X-Ho\nst", strings.Repeat("h", 65)},
	},
	"proxy-protocol-header-timeout": secondsCases("5", func(s *bus.Settings) *int { return &s.ProxyProtocolHeaderTimeout },
		[]int{1, 5, 60}, []string{"0", "-1"}),
}
