package bus

import (
	"fmt"
	"net"
	"net/netip"
	"regexp"
	"strconv"
)

// HTTPSettings are the controller ConfigMap keys of the http{} level that
// are neither proxying nor TLS: compression, the access log, and the
// headers added to every response or request.
type HTTPSettings struct {
	UseGzip       bool     `json:"useGzip"`       // use-gzip
	GzipLevel     int      `json:"gzipLevel"`     // gzip-level, 1 to 9
	GzipMinLength int      `json:"gzipMinLength"` // gzip-min-length, bytes
	GzipTypes     []string `json:"gzipTypes"`     // gzip-types, space-separated MIME types
	// GzipDisable is gzip-disable: one regex matched against User-Agent
	// (case-insensitive, NGINX's gzip_disable), or "msie6"; "" for none.
	GzipDisable string `json:"gzipDisable,omitempty"`

	EnableBrotli    bool     `json:"enableBrotli"`    // enable-brotli (Debian's libnginx-mod-http-brotli-filter)
	BrotliLevel     int      `json:"brotliLevel"`     // brotli-level, 0 to 11
	BrotliMinLength int      `json:"brotliMinLength"` // brotli-min-length, bytes
	BrotliTypes     []string `json:"brotliTypes"`     // brotli-types, space-separated MIME types

	// AccessLogPath is access-log-path: an absolute file path, or "" (the
	// default) to let the run flag --access-log decide.
	AccessLogPath    string `json:"accessLogPath"`
	DisableAccessLog bool   `json:"disableAccessLog"` // disable-access-log
	// DisableHTTPAccessLog is disable-http-access-log: the http block's
	// log off, the stream block's kept (disable-access-log turns off both).
	DisableHTTPAccessLog bool `json:"disableHTTPAccessLog,omitempty"`
	// HTTPAccessLogPath is http-access-log-path: the http block's log file,
	// before access-log-path; "" for access-log-path's.
	HTTPAccessLogPath string `json:"httpAccessLogPath,omitempty"`
	// AccessLogParams is access-log-params: access_log's buffer, gzip,
	// flush and if parameters, for the http and stream logs.
	AccessLogParams AccessLogParams `json:"accessLogParams,omitzero"`
	// EnableAccessLogForDefaultBackend is enable-access-log-for-default-backend:
	// the catch-all server's own default location logs too (off in
	// ingress-nginx by default).
	EnableAccessLogForDefaultBackend bool `json:"enableAccessLogForDefaultBackend,omitempty"`
	// EnableAuthAccessLog is enable-auth-access-log: external auth
	// subrequests are logged too.
	EnableAuthAccessLog bool `json:"enableAuthAccessLog,omitempty"`
	// Syslog is enable-syslog, syslog-host and syslog-port.
	Syslog              SyslogSettings `json:"syslog"`
	SkipAccessLogURLs   []string       `json:"skipAccessLogURLs"`   // skip-access-log-urls: request URIs not logged
	LogFormatEscapeJSON bool           `json:"logFormatEscapeJSON"` // log-format-escape-json
	LogFormatEscapeNone bool           `json:"logFormatEscapeNone"` // log-format-escape-none (wins over JSON, as in ingress-nginx)

	// AddHeaders and ProxySetHeaders are add-headers and proxy-set-headers:
	// "namespace/name" of a ConfigMap whose data are headers added to every
	// response, or sent to every backend; "" for none. The translator
	// resolves them into AddHeaderValues and ProxySetHeaderValues.
	AddHeaders           string            `json:"addHeaders"`
	ProxySetHeaders      string            `json:"proxySetHeaders"`
	AddHeaderValues      map[string]string `json:"addHeaderValues,omitempty"`
	ProxySetHeaderValues map[string]string `json:"proxySetHeaderValues,omitempty"`
	HideHeaders          []string          `json:"hideHeaders"` // hide-headers: response headers of the backend not passed on
	// ProxyAddOriginalURIHeader is proxy-add-original-uri-header: the
	// client's request URI goes to the backend as X-Original-URI.
	ProxyAddOriginalURIHeader bool `json:"proxyAddOriginalURIHeader,omitempty"`
}

// SyslogSettings are enable-syslog, syslog-host and syslog-port: with
// Enable, the http block's access log goes to the syslog server (UDP)
// instead of its file, and its error log goes there too. One value, so
// that a refused server (NGINX resolves the host when it loads the
// configuration) is traced to and reset by enable-syslog as a whole.
type SyslogSettings struct {
	Enable bool   `json:"enable,omitempty"`
	Host   string `json:"host,omitempty"` // a host name or an IP address (ValidSyslogHost)
	Port   int    `json:"port"`
}

// syslogHostPattern is a DNS name (hostNameRE).
var syslogHostPattern = regexp.MustCompile(`^` + hostNameRE + `$`)

// ValidSyslogHost says whether h is a host name (at most 253 characters)
// or an IP address without a zone: nothing NGINX could read as another
// parameter of syslog:server=.
func ValidSyslogHost(h string) bool {
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Zone() == ""
	}
	return len(h) <= 253 && syslogHostPattern.MatchString(h)
}

// Active says whether the logs go to syslog: enable-syslog with a
// syslog-host (without one the translator reports the key as having no
// effect).
func (s SyslogSettings) Active() bool { return s.Enable && s.Host != "" }

// SyslogServer is syslog:server='s argument: host:port, an IPv6 address
// in brackets.
func (s SyslogSettings) SyslogServer() (string, error) {
	if !ValidSyslogHost(s.Host) || s.Port < 1 || s.Port > 65535 {
		return "", fmt.Errorf("refusing syslog server %q port %d", s.Host, s.Port)
	}
	return net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), nil
}

// AccessLogParams are access_log's optional parameters (access-log-params),
// each "" when not given. Buffer is an NGINX size, Gzip "" or "gzip" or
// "gzip=1".."gzip=9", Flush an NGINX time, If a variable name without "$".
type AccessLogParams struct {
	Buffer string `json:"buffer,omitempty"`
	Gzip   string `json:"gzip,omitempty"`
	Flush  string `json:"flush,omitempty"`
	If     string `json:"if,omitempty"`
}

// DefaultCompressibleTypes is ingress-nginx's gzip-types.
var DefaultCompressibleTypes = []string{
	"application/atom+xml", "application/javascript", "application/x-javascript", "application/json",
	"application/rss+xml", "application/vnd.ms-fontobject", "application/x-font-ttf",
	"application/x-web-app-manifest+json", "application/xhtml+xml", "application/xml", "font/opentype",
	"image/svg+xml", "image/x-icon", "text/css", "text/javascript", "text/plain", "text/x-component",
}

// defaultHTTPSettings are ingress-nginx's defaults for HTTPSettings.
func defaultHTTPSettings() HTTPSettings {
	return HTTPSettings{
		GzipLevel: 1, GzipMinLength: 256, GzipTypes: append([]string(nil), DefaultCompressibleTypes...),
		BrotliLevel: 4, BrotliMinLength: 20,
		BrotliTypes:       append([]string{"application/xml+rss"}, DefaultCompressibleTypes...),
		SkipAccessLogURLs: []string{}, HideHeaders: []string{}, Syslog: SyslogSettings{Port: 514},
	}
}
