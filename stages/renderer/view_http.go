package renderer

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// httpView is the http{}-level part of nginx.conf that comes from
// bus.HTTPSettings: compression, which requests are logged, and headers
// hidden from responses (templates/http_settings.tmpl prints it).
type httpView struct {
	Src    httpSources
	Static string
	Gzip   *compressionView // nil: use-gzip is off
	Brotli *compressionView // nil: enable-brotli is off
	// SkipURLs are skip-access-log-urls, quoted map keys; access_log then
	// logs only if $switchyard_loggable, which is LoggableDefault ("1", or
	// access-log-params' if= variable) for every other request URI.
	SkipURLs        []string
	LoggableDefault string
	// GzipDisable is gzip-disable's quoted regex (or "msie6"), "" for none.
	GzipDisable string
	HideHeaders []string // quoted header names
	// AddHeaders (add-headers) go on every response; ProxySetHeaders
	// (proxy-set-headers) to every backend. Both quoted, sorted by name.
	AddHeaders, ProxySetHeaders []headerView
}

// compressionView is one compression filter's settings.
type compressionView struct {
	Level, MinLength int
	Types            string // quoted MIME types, space-separated
}

// httpSources are the attribution comments of the lines written from
// bus.HTTPSettings.
type httpSources struct {
	UseGzip, GzipLevel, GzipMinLength, GzipTypes            string
	EnableBrotli, BrotliLevel, BrotliMinLength, BrotliTypes string
	AccessLogPath, SkipAccessLogURLs, HideHeaders           string
	AddHeaders, ProxySetHeaders, GzipDisable                string
	// LoggableDefault attributes the skip map's default when it is
	// access-log-params' if= variable, "" otherwise.
	LoggableDefault string
	// The access_log line's attribution when one of these keys decides it.
	httpAccessLogPath, disableHTTPAccessLog, accessLogParams string
	// EnableSyslog attributes the error_log line to the syslog server
	// (enable-syslog, syslog-host and syslog-port are one value).
	EnableSyslog string
}

// httpSettingFields are the bus.HTTPSettings keys written into nginx.conf,
// for attribution and for the fallback to the default on a refusal
// (revisions.go).
var httpSettingFields = map[string]func(*bus.Settings) any{
	"use-gzip":                func(s *bus.Settings) any { return &s.UseGzip },
	"gzip-level":              func(s *bus.Settings) any { return &s.GzipLevel },
	"gzip-min-length":         func(s *bus.Settings) any { return &s.GzipMinLength },
	"gzip-types":              func(s *bus.Settings) any { return &s.GzipTypes },
	"gzip-disable":            func(s *bus.Settings) any { return &s.GzipDisable },
	"enable-brotli":           func(s *bus.Settings) any { return &s.EnableBrotli },
	"brotli-level":            func(s *bus.Settings) any { return &s.BrotliLevel },
	"brotli-min-length":       func(s *bus.Settings) any { return &s.BrotliMinLength },
	"brotli-types":            func(s *bus.Settings) any { return &s.BrotliTypes },
	"access-log-path":         func(s *bus.Settings) any { return &s.AccessLogPath },
	"disable-access-log":      func(s *bus.Settings) any { return &s.DisableAccessLog },
	"skip-access-log-urls":    func(s *bus.Settings) any { return &s.SkipAccessLogURLs },
	"disable-http-access-log": func(s *bus.Settings) any { return &s.DisableHTTPAccessLog },
	"http-access-log-path":    func(s *bus.Settings) any { return &s.HTTPAccessLogPath },
	"access-log-params":       func(s *bus.Settings) any { return &s.AccessLogParams },
	// syslog-host and syslog-port are attributed as enable-syslog: a
	// refused server resets all three.
	"enable-syslog": func(s *bus.Settings) any { return &s.Syslog },
	// The servers' and auth locations' access_log lines.
	"enable-access-log-for-default-backend": func(s *bus.Settings) any { return &s.EnableAccessLogForDefaultBackend },
	"enable-auth-access-log":                func(s *bus.Settings) any { return &s.EnableAuthAccessLog },
	"proxy-add-original-uri-header":         func(s *bus.Settings) any { return &s.ProxyAddOriginalURIHeader },
	"log-format-escape-json":                func(s *bus.Settings) any { return &s.LogFormatEscapeJSON },
	"log-format-escape-none":                func(s *bus.Settings) any { return &s.LogFormatEscapeNone },
	"hide-headers":                          func(s *bus.Settings) any { return &s.HideHeaders },
	// The headers' revision covers the ConfigMap they come from.
	"add-headers":       func(s *bus.Settings) any { return &s.AddHeaderValues },
	"proxy-set-headers": func(s *bus.Settings) any { return &s.ProxySetHeaderValues },
}

func init() { registerSettingFields(httpSettingFields) }

// brotliModule is Debian's libnginx-mod-http-brotli-filter, loaded only
// when enable-brotli is on.
const brotliModule = "ngx_http_brotli_filter_module.so"

// newHTTPView resolves the http{} settings, and the access log and log
// format lines of v they change.
func newHTTPView(v *mainView, cfg Config, s bus.Settings, src sources) error {
	h := httpView{Static: sourceSwitchyard, Src: newHTTPSources(src)}
	var err error
	if s.UseGzip {
		if h.Gzip, err = newCompressionView(s.GzipLevel, s.GzipMinLength, s.GzipTypes); err != nil {
			return err
		}
		if h.GzipDisable, err = gzipDisable(s.GzipDisable); err != nil {
			return err
		}
	}
	if s.EnableBrotli {
		if h.Brotli, err = newCompressionView(s.BrotliLevel, s.BrotliMinLength, s.BrotliTypes); err != nil {
			return err
		}
		if v.BrotliModule, err = quote(cfg.ModulesDir + "/" + brotliModule); err != nil {
			return err
		}
	}
	if h.HideHeaders, err = quoteAll(s.HideHeaders); err != nil {
		return err
	}
	if h.AddHeaders, err = headerViews(s.AddHeaderValues); err != nil {
		return err
	}
	if h.ProxySetHeaders, err = headerViews(s.ProxySetHeaderValues); err != nil {
		return err
	}
	if err := accessLog(v, &h, cfg, s); err != nil {
		return err
	}
	switch {
	case s.LogFormatEscapeNone: // wins over JSON, as in ingress-nginx
		v.LogFormat = "escape=none " + v.LogFormat
	case s.LogFormatEscapeJSON:
		v.LogFormat = "escape=json " + v.LogFormat
	}
	v.HTTP = h
	return nil
}

// accessLog decides the access_log line as ingress-nginx's template does:
// off with disable-access-log or disable-http-access-log; else the file of
// http-access-log-path, access-log-path, or the --access-log flag's when
// neither key is set; with access-log-params; only requests outside
// skip-access-log-urls.
func accessLog(v *mainView, h *httpView, cfg Config, s bus.Settings) error {
	v.AccessLog = "off"
	switch {
	case s.DisableAccessLog:
		return nil
	case s.DisableHTTPAccessLog:
		h.Src.AccessLogPath = h.Src.disableHTTPAccessLog
		return nil
	}
	if s.Syslog.Active() {
		return syslogAccessLog(v, h, s)
	}
	path, err := accessLogFile(h, cfg, s)
	if err != nil || path == "" {
		return err
	}
	params, err := accessLogParams(s.AccessLogParams)
	if err != nil {
		return err
	}
	v.AccessLog = path + " upstreaminfo" + params
	if s.AccessLogParams != (bus.AccessLogParams{}) {
		// The parameters are what NGINX may refuse (an unknown if=
		// variable): the line falls back to none of them.
		h.Src.AccessLogPath = h.Src.accessLogParams
	}
	condition, err := logCondition(h, s)
	if condition != "" {
		v.AccessLog += " if=" + condition
	}
	return err
}

// syslogAccessLog is the access_log line of enable-syslog, as
// ingress-nginx writes it: to the syslog server instead of the file,
// without buffer, gzip or flush (NGINX refuses to buffer a syslog log),
// with the if= condition.
func syslogAccessLog(v *mainView, h *httpView, s bus.Settings) error {
	server, err := s.Syslog.SyslogServer()
	if err != nil {
		return err
	}
	h.Src.AccessLogPath = h.Src.EnableSyslog
	v.AccessLog = "syslog:server=" + server + " upstreaminfo"
	condition, err := logCondition(h, s)
	if condition != "" {
		v.AccessLog += " if=" + condition
	}
	return err
}

// syslogErrorLog is the error_log target of enable-syslog, "" without it.
func syslogErrorLog(s bus.SyslogSettings) (string, error) {
	if !s.Active() {
		return "", nil
	}
	server, err := s.SyslogServer()
	return "syslog:server=" + server, err
}

// accessLogFile is the http block's log file, quoted: http-access-log-path,
// access-log-path, or the --access-log flag's; "" for none.
func accessLogFile(h *httpView, cfg Config, s bus.Settings) (string, error) {
	switch {
	case s.HTTPAccessLogPath != "":
		h.Src.AccessLogPath = h.Src.httpAccessLogPath
		return quote(s.HTTPAccessLogPath)
	case s.AccessLogPath != "":
		return quote(s.AccessLogPath)
	case cfg.AccessLog:
		h.Src.AccessLogPath = sourceSwitchyard
		return "logs/access.log", nil
	}
	return "", nil
}

// logCondition is access_log's if= variable: access-log-params' own, or,
// with skip-access-log-urls, the skip map's, whose default is then that
// variable (one if= only: NGINX keeps the last).
func logCondition(h *httpView, s bus.Settings) (string, error) {
	condition := ""
	if s.AccessLogParams.If != "" {
		condition = "$" + s.AccessLogParams.If
	}
	if len(s.SkipAccessLogURLs) == 0 {
		return condition, nil
	}
	var err error
	if h.SkipURLs, err = quoteAll(s.SkipAccessLogURLs); err != nil {
		return "", err
	}
	h.LoggableDefault = cmp.Or(condition, "1")
	if condition != "" {
		h.Src.LoggableDefault = h.Src.accessLogParams
	}
	return "$switchyard_loggable", nil
}

// accessLogParams are access-log-params' buffer, gzip and flush parameters
// as access_log's arguments (with a leading space), each checked again, as
// is the if= variable, which the caller writes (accessLog).
func accessLogParams(p bus.AccessLogParams) (string, error) {
	var b strings.Builder
	if p.Buffer != "" {
		if _, err := features.ParseBufferSize(p.Buffer); err != nil {
			return "", fmt.Errorf("access-log-params: buffer=%q: %w", p.Buffer, err)
		}
		b.WriteString(" buffer=" + p.Buffer)
	}
	if p.Gzip != "" {
		if !gzipParamPattern.MatchString(p.Gzip) {
			return "", fmt.Errorf("access-log-params: refusing %q", p.Gzip)
		}
		b.WriteString(" " + p.Gzip)
	}
	if p.Flush != "" {
		if !settingPattern.MatchString(p.Flush) {
			return "", fmt.Errorf("access-log-params: refusing flush=%q", p.Flush)
		}
		b.WriteString(" flush=" + p.Flush)
	}
	if p.If != "" && !variableNamePattern.MatchString(p.If) {
		return "", fmt.Errorf("access-log-params: refusing if=$%q", p.If)
	}
	return b.String(), nil
}

var (
	gzipParamPattern    = regexp.MustCompile(`^gzip(=[1-9])?$`)
	variableNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]{0,63}$`)
)

// gzipDisable quotes gzip-disable's regex, checked again as the block
// lists' regexes are (features.ValidMapMatch): no double quote or NGINX
// escape can reach the quoted argument.
func gzipDisable(re string) (string, error) {
	if re == "" {
		return "", nil
	}
	if re != "msie6" && (strings.HasPrefix(re, "*") || features.ValidMapMatch("~"+re) != nil) {
		return "", fmt.Errorf("gzip-disable: refusing to write %q into nginx.conf", re)
	}
	return `"` + re + `"`, nil
}

func newCompressionView(level, minLength int, types []string) (*compressionView, error) {
	quoted, err := quoteAll(types)
	if err != nil {
		return nil, err
	}
	return &compressionView{Level: level, MinLength: minLength, Types: strings.Join(quoted, " ")}, nil
}

func newHTTPSources(src sources) httpSources {
	s := src.configMapSource
	return httpSources{
		UseGzip: s("use-gzip"), GzipLevel: s("gzip-level"), GzipMinLength: s("gzip-min-length"), GzipTypes: s("gzip-types"),
		EnableBrotli: s("enable-brotli"), BrotliLevel: s("brotli-level"), BrotliMinLength: s("brotli-min-length"),
		BrotliTypes: s("brotli-types"), AccessLogPath: s("access-log-path"), SkipAccessLogURLs: s("skip-access-log-urls"),
		HideHeaders: s("hide-headers"), AddHeaders: s("add-headers"), ProxySetHeaders: s("proxy-set-headers"),
		GzipDisable: s("gzip-disable"), httpAccessLogPath: s("http-access-log-path"), disableHTTPAccessLog: s("disable-http-access-log"),
		accessLogParams: s("access-log-params"), EnableSyslog: s("enable-syslog"),
	}
}

// proxyHeadersView is what the headers sent upstream vary by
// (templates/proxy_headers.tmpl), wherever they are written.
type proxyHeadersView struct {
	FullForwardedFor bool // compute-full-forwarded-for
	OriginalURI      bool // proxy-add-original-uri-header: X-Original-URI
}

func newProxyHeadersView(s bus.Settings) proxyHeadersView {
	return proxyHeadersView{FullForwardedFor: s.ComputeFullForwardedFor, OriginalURI: s.ProxyAddOriginalURIHeader}
}

// quoteAll quotes each item.
func quoteAll(items []string) ([]string, error) {
	out := make([]string, 0, len(items))
	for _, it := range items {
		q, err := quote(it)
		if err != nil {
			return nil, err
		}
		out = append(out, q)
	}
	return out, nil
}

// headerViews quotes headers, sorted by name so the output is stable.
func headerViews(headers map[string]string) ([]headerView, error) {
	if len(headers) == 0 {
		return nil, nil
	}
	out := make([]headerView, 0, len(headers))
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		if err := (bus.Header{Name: name, Value: headers[name]}).Validate(); err != nil {
			return nil, err
		}
		n, err := quote(name)
		if err != nil {
			return nil, err
		}
		v, err := quote(headers[name])
		if err != nil {
			return nil, err
		}
		out = append(out, headerView{Name: n, Value: v})
	}
	return out, nil
}
