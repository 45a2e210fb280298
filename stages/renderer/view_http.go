package renderer

import (
	"maps"
	"slices"
	"strings"

	"switchyard.dev/switchyard/bus"
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
	// logs only if $switchyard_loggable.
	SkipURLs    []string
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
	AddHeaders, ProxySetHeaders                             string
}

// httpSettingFields are the bus.HTTPSettings keys written into nginx.conf,
// for attribution and for the fallback to the default on a refusal
// (revisions.go).
var httpSettingFields = map[string]func(*bus.Settings) any{
	"use-gzip":               func(s *bus.Settings) any { return &s.UseGzip },
	"gzip-level":             func(s *bus.Settings) any { return &s.GzipLevel },
	"gzip-min-length":        func(s *bus.Settings) any { return &s.GzipMinLength },
	"gzip-types":             func(s *bus.Settings) any { return &s.GzipTypes },
	"enable-brotli":          func(s *bus.Settings) any { return &s.EnableBrotli },
	"brotli-level":           func(s *bus.Settings) any { return &s.BrotliLevel },
	"brotli-min-length":      func(s *bus.Settings) any { return &s.BrotliMinLength },
	"brotli-types":           func(s *bus.Settings) any { return &s.BrotliTypes },
	"access-log-path":        func(s *bus.Settings) any { return &s.AccessLogPath },
	"disable-access-log":     func(s *bus.Settings) any { return &s.DisableAccessLog },
	"skip-access-log-urls":   func(s *bus.Settings) any { return &s.SkipAccessLogURLs },
	"log-format-escape-json": func(s *bus.Settings) any { return &s.LogFormatEscapeJSON },
	"log-format-escape-none": func(s *bus.Settings) any { return &s.LogFormatEscapeNone },
	"hide-headers":           func(s *bus.Settings) any { return &s.HideHeaders },
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

// accessLog decides the access_log line: off when disable-access-log is
// on; else access-log-path, or the --access-log flag's file when the key
// is not set; only requests outside skip-access-log-urls.
func accessLog(v *mainView, h *httpView, cfg Config, s bus.Settings) error {
	v.AccessLog = "off"
	if s.DisableAccessLog {
		return nil
	}
	path := ""
	switch {
	case s.AccessLogPath != "":
		q, err := quote(s.AccessLogPath)
		if err != nil {
			return err
		}
		path = q
	case cfg.AccessLog:
		path = "logs/access.log"
		h.Src.AccessLogPath = sourceSwitchyard
	default:
		return nil
	}
	v.AccessLog = path + " upstreaminfo"
	if len(s.SkipAccessLogURLs) > 0 {
		var err error
		if h.SkipURLs, err = quoteAll(s.SkipAccessLogURLs); err != nil {
			return err
		}
		v.AccessLog += " if=$switchyard_loggable"
	}
	return nil
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
	}
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
