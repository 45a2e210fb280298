package renderer

import (
	"fmt"
	"strings"

	"switchyard.dev/switchyard/bus"
)

// tlsSettingFields are the bus.TLSSettings keys written into nginx.conf,
// for attribution and for the fallback to the default on a refusal
// (revisions.go).
var tlsSettingFields = map[string]func(*bus.Settings) any{
	"ssl-ecdh-curve":         func(s *bus.Settings) any { return &s.SSLECDHCurve },
	"ssl-session-cache":      func(s *bus.Settings) any { return &s.SSLSessionCache },
	"ssl-session-cache-size": func(s *bus.Settings) any { return &s.SSLSessionCacheSize },
	"ssl-session-timeout":    func(s *bus.Settings) any { return &s.SSLSessionTimeout },
	"ssl-session-tickets":    func(s *bus.Settings) any { return &s.SSLSessionTickets },
	"ssl-buffer-size":        func(s *bus.Settings) any { return &s.SSLBufferSize },
	"ssl-early-data":         func(s *bus.Settings) any { return &s.SSLEarlyData },
	"ssl-reject-handshake":   func(s *bus.Settings) any { return &s.SSLRejectHandshake },
	"ssl-dh-param":           func(s *bus.Settings) any { return &s.SSLDHParam },
	"ssl-session-ticket-key": func(s *bus.Settings) any { return &s.SSLSessionTicketKey },
	"http-redirect-code":     func(s *bus.Settings) any { return &s.HTTPRedirectCode },
}

func init() { registerSettingFields(tlsSettingFields) }

// newTLSLines are the http{}-level TLS directives from bus.TLSSettings,
// each attributed to its key. The curve list is quoted (it holds ":");
// every other argument passes the directive checks.
func newTLSLines(s bus.Settings, src sources) ([]sourcedLine, error) {
	curve, err := quote(s.SSLECDHCurve)
	if err != nil {
		return nil, err
	}
	out := []sourcedLine{{Src: src.configMapSource("ssl-ecdh-curve"), Line: "ssl_ecdh_curve " + curve}}
	if s.SSLDHParamPEM != "" {
		// The path is ours: a hash of the checked content.
		out = append(out, sourcedLine{Src: src.configMapSource("ssl-dh-param"), Line: `ssl_dhparam "` + DHParamFile(s.SSLDHParamPEM) + `"`})
	}
	if ticketKey(s) != nil {
		out = append(out, sourcedLine{Src: src.configMapSource("ssl-session-ticket-key"), Line: `ssl_session_ticket_key "` + TicketKeyFile + `"`})
	}
	cache, cacheKey := []string{"none"}, "ssl-session-cache"
	if s.SSLSessionCache {
		cache, cacheKey = []string{"shared:SSL:" + s.SSLSessionCacheSize}, "ssl-session-cache-size"
	}
	for _, k := range []struct {
		key, name string
		args      []string
	}{
		{cacheKey, "ssl_session_cache", cache},
		{"ssl-session-timeout", "ssl_session_timeout", []string{s.SSLSessionTimeout}},
		{"ssl-session-tickets", "ssl_session_tickets", []string{onOff(s.SSLSessionTickets)}},
		{"ssl-buffer-size", "ssl_buffer_size", []string{s.SSLBufferSize}},
		{"ssl-early-data", "ssl_early_data", []string{onOff(s.SSLEarlyData)}},
	} {
		line, err := tlsDirective(k.name, k.args)
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %w", k.key, err)
		}
		out = append(out, sourcedLine{Src: src.configMapSource(k.key), Line: line})
	}
	return out, nil
}

// tlsDirective checks each argument as a proxy word would be, except the
// "shared:SSL:" zone prefix, which is ours.
func tlsDirective(name string, args []string) (string, error) {
	for _, a := range args {
		if !proxyWordPattern.MatchString(strings.TrimPrefix(a, "shared:SSL:")) {
			return "", fmt.Errorf("%s: invalid argument %q", name, a)
		}
	}
	return name + " " + strings.Join(args, " "), nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// DHParamFile is the path of the ssl-dh-param file with the given content.
func DHParamFile(pem string) string { return secretDir + contentName(pem) + ".dhparam.pem" }

// flushSettingFiles publishes the files nginx.conf names for the
// ConfigMap's ssl-dh-param and ssl-session-ticket-key, and deletes the
// ones they replace.
func (r *Renderer) flushSettingFiles(s bus.Settings, out *bus.Output) {
	dh := ""
	if s.SSLDHParamPEM != "" {
		dh = DHParamFile(s.SSLDHParamPEM)
	}
	r.flushSettingFile(&r.dhParamFile, dh, s.SSLDHParamPEM, out)
	key, path := ticketKey(s), ""
	if key != nil {
		path = TicketKeyFile
	}
	r.flushSettingFile(&r.ticketKeyFile, path, string(key), out)
	cert, certPath, keyPEM, keyPath := "", "", "", ""
	if key != nil {
		cert, keyPEM = r.sessionContext.certificate(key)
		certPath, keyPath = SessionContextCertFile, SessionContextKeyFile
	}
	r.flushSettingFile(&r.contextCertFile, certPath, cert, out)
	r.flushSettingFile(&r.contextKeyFile, keyPath, keyPEM, out)
}

// flushSettingFile publishes content at path ("" for no file) and
// deletes *last, the file published before, when it is another.
func (r *Renderer) flushSettingFile(last *string, path, content string, out *bus.Output) {
	if path != "" {
		r.files[path] = true
		putFile(out, path, content)
	}
	if *last != "" && *last != path {
		delete(r.files, *last)
		out.Deletes = append(out.Deletes, fileKey(*last))
	}
	*last = path
}
