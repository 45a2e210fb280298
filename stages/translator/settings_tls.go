package translator

import (
	"regexp"
	"strconv"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// tlsSettings are the TLS termination keys (bus.TLSSettings).
var tlsSettings = map[string]settingParser{
	"ssl-ecdh-curve": patternSetting(func(s *bus.Settings) *string { return &s.SSLECDHCurve }, ecdhCurvePattern,
		`"auto", or up to 16 curve names (letters, digits, _ and -) separated by ":", such as X25519:prime256v1`),
	"ssl-session-cache": boolSetting(func(s *bus.Settings) *bool { return &s.SSLSessionCache }),
	"ssl-session-cache-size": sizeSetting(func(s *bus.Settings) *string { return &s.SSLSessionCacheSize },
		features.ParseBufferSize, bufferSizeRule),
	"ssl-session-timeout": patternSetting(func(s *bus.Settings) *string { return &s.SSLSessionTimeout }, timePattern, timeRule),
	"ssl-session-tickets": boolSetting(func(s *bus.Settings) *bool { return &s.SSLSessionTickets }),
	"ssl-buffer-size": sizeSetting(func(s *bus.Settings) *string { return &s.SSLBufferSize },
		features.ParseBufferSize, bufferSizeRule),
	// The Secret is read by resolveDHParam; its name has the shape of a
	// ConfigMap reference.
	"ssl-dh-param": setting(func(s *bus.Settings) *string { return &s.SSLDHParam },
		`"namespace/name" of a Secret with dhparam.pem, or empty for none`, parseConfigMapRef, identity),
	"ssl-session-ticket-key": secretSetting(setting(func(s *bus.Settings) *string { return &s.SSLSessionTicketKey },
		"the standard base64 of 48 or 80 random bytes (openssl rand 80 piped to openssl enc -A -base64), or empty for keys each NGINX makes itself",
		parseTicketKey, identity)),
	"ssl-early-data":       boolSetting(func(s *bus.Settings) *bool { return &s.SSLEarlyData }),
	"ssl-reject-handshake": boolSetting(func(s *bus.Settings) *bool { return &s.SSLRejectHandshake }),
	"enable-ocsp":          boolSetting(func(s *bus.Settings) *bool { return &s.EnableOCSP }),
	"http-redirect-code": setting(func(s *bus.Settings) *int { return &s.HTTPRedirectCode }, "301, 302, 307 or 308",
		func(v string) (int, bool) {
			switch v {
			case "301", "302", "307", "308":
				n, _ := strconv.Atoi(v)
				return n, true
			}
			return 0, false
		}, strconv.Itoa),
}

var ecdhCurvePattern = regexp.MustCompile(`^(auto|[A-Za-z0-9_-]{1,32}(:[A-Za-z0-9_-]{1,32}){0,15})$`)

// parseTicketKey accepts an ssl-session-ticket-key NGINX can load; the
// value is kept as given (the renderer decodes it into the key file).
func parseTicketKey(v string) (string, bool) {
	if v == "" {
		return "", true
	}
	_, err := bus.DecodeTicketKey(v)
	return v, err == nil
}

// secretSetting marks p's values as secrets: an invalid one is reported
// without its value.
func secretSetting(p settingParser) settingParser {
	p.secret = true
	return p
}
