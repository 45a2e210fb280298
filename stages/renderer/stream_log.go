package renderer

import "switchyard.dev/switchyard/bus"

// The stream block's access log (log-format-stream, stream-access-log-path,
// disable-stream-access-log), as ingress-nginx writes it: format log_stream,
// the file of stream-access-log-path or else access-log-path's (never
// http-access-log-path's), off with disable-access-log or
// disable-stream-access-log, with access-log-params' buffer, gzip and flush
// (its if= names an http variable, which the stream block does not have).
// The TLS passthrough servers (stream.conf.tmpl) do not log: ingress-nginx's
// passthrough is not NGINX's, and every terminated HTTPS connection would be
// logged.

func init() {
	registerSettingFields(map[string]func(*bus.Settings) any{
		"log-format-stream":         func(s *bus.Settings) any { return &s.LogFormatStream },
		"stream-access-log-path":    func(s *bus.Settings) any { return &s.StreamAccessLogPath },
		"disable-stream-access-log": func(s *bus.Settings) any { return &s.DisableStreamAccessLog },
	})
}

// streamLogView is what nginx.conf's stream block writes of its log.
type streamLogView struct {
	Src struct {
		LogFormatStream, AccessLog string
	}
	Format    string // quoted
	AccessLog string // `"path" log_stream`, or "off"
}

func newStreamLogView(cfg Config, s bus.Settings, src sources) (streamLogView, error) {
	v := streamLogView{AccessLog: "off"}
	v.Src.LogFormatStream = src.configMapSource("log-format-stream")
	var err error
	if v.Format, err = logFormat(s.LogFormatStream); err != nil {
		return v, err
	}
	v.Src.AccessLog = sourceSwitchyard
	var path string
	switch {
	case s.DisableAccessLog:
		v.Src.AccessLog = src.configMapSource("disable-access-log")
	case s.DisableStreamAccessLog:
		v.Src.AccessLog = src.configMapSource("disable-stream-access-log")
	case s.StreamAccessLogPath != "":
		v.Src.AccessLog = src.configMapSource("stream-access-log-path")
		path = s.StreamAccessLogPath
	case s.AccessLogPath != "":
		v.Src.AccessLog = src.configMapSource("access-log-path")
		path = s.AccessLogPath
	case cfg.AccessLog:
		path = "logs/access.log"
	}
	if path == "" {
		return v, nil
	}
	q, err := quote(path)
	if err != nil {
		return v, err
	}
	params, err := accessLogParams(s.AccessLogParams)
	if err != nil {
		return v, err
	}
	v.AccessLog = q + " log_stream" + params
	if params != "" {
		v.Src.AccessLog = src.configMapSource("access-log-params")
	}
	return v, nil
}
