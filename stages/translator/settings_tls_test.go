package translator

import (
	"encoding/base64"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// Ticket keys of the two sizes NGINX reads, and one it does not.
var (
	ticketKey48 = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 48)))
	ticketKey80 = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("K", 80)))
	ticketKey32 = base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", 32)))
)

var tlsSettingsCases = map[string]keyCases{
	"ssl-ecdh-curve": stringCases("auto", func(s *bus.Settings) *string { return &s.SSLECDHCurve },
		[]string{"auto", "X25519", "X25519:prime256v1:secp384r1"}, []string{"X25519;", "a b", ":X25519", "X25519:", "$curve"}),
	"ssl-session-cache": boolCases(true, func(s *bus.Settings) *bool { return &s.SSLSessionCache }),
	"ssl-session-cache-size": stringCases("10m", func(s *bus.Settings) *string { return &s.SSLSessionCacheSize },
		[]string{"10m", "50m", "512k"}, []string{"10 m", "1g", "-1", "10m;"}),
	"ssl-session-timeout": stringCases("10m", func(s *bus.Settings) *string { return &s.SSLSessionTimeout },
		[]string{"10m", "1h", "1d", "300s"}, []string{"10 m", "forever", "1h;"}),
	"ssl-session-tickets": boolCases(false, func(s *bus.Settings) *bool { return &s.SSLSessionTickets }),
	"ssl-buffer-size": stringCases("4k", func(s *bus.Settings) *string { return &s.SSLBufferSize },
		[]string{"4k", "16k", "1400"}, []string{"4 k", "4kb", "x"}),
	"ssl-early-data":       boolCases(false, func(s *bus.Settings) *bool { return &s.SSLEarlyData }),
	"ssl-reject-handshake": boolCases(false, func(s *bus.Settings) *bool { return &s.SSLRejectHandshake }),
	"enable-ocsp":          boolCases(false, func(s *bus.Settings) *bool { return &s.EnableOCSP }),
	"ssl-dh-param": {def: "", invalid: []string{"dhparam", "a/b/c", "ns/$x", "ns/a;b", "/name"}, valid: []valid{
		{"", func(s *bus.Settings) { s.SSLDHParam = "" }},
		{"ingress/dhparam", func(s *bus.Settings) { s.SSLDHParam = "ingress/dhparam" }},
		{"kube-system/dh-2048", func(s *bus.Settings) { s.SSLDHParam = "kube-system/dh-2048" }},
	}},
	"ssl-session-ticket-key": {def: "", invalid: []string{ticketKey32, "not base64!", ticketKey80 + "=", ticketKey48[:10] + " " + ticketKey48[10:]},
		valid: []valid{
			{"", setString(func(s *bus.Settings) *string { return &s.SSLSessionTicketKey }, "")},
			{ticketKey48, setString(func(s *bus.Settings) *string { return &s.SSLSessionTicketKey }, ticketKey48)},
			{" " + ticketKey80 + "\n", setString(func(s *bus.Settings) *string { return &s.SSLSessionTicketKey }, ticketKey80)},
			// openssl enc -base64 without -A breaks lines at 64.
			{ticketKey80[:64] + "\n" + ticketKey80[64:], setString(func(s *bus.Settings) *string { return &s.SSLSessionTicketKey },
				ticketKey80[:64]+"\n"+ticketKey80[64:])},
		}},
	"http-redirect-code": {def: "308", invalid: []string{"", "300", "200", "3O8", "308;", "+308"}, valid: []valid{
		{"301", func(s *bus.Settings) { s.HTTPRedirectCode = 301 }},
		{"302", func(s *bus.Settings) { s.HTTPRedirectCode = 302 }},
		{"307", func(s *bus.Settings) { s.HTTPRedirectCode = 307 }},
		{"308", func(s *bus.Settings) { s.HTTPRedirectCode = 308 }},
	}},
}
