package bus

// HTTPSettings are the controller ConfigMap keys of the http{} level that
// are neither proxying nor TLS: compression, the access log, and the
// headers added to every response or request.
type HTTPSettings struct {
	UseGzip       bool     `json:"useGzip"`       // use-gzip
	GzipLevel     int      `json:"gzipLevel"`     // gzip-level, 1 to 9
	GzipMinLength int      `json:"gzipMinLength"` // gzip-min-length, bytes
	GzipTypes     []string `json:"gzipTypes"`     // gzip-types, space-separated MIME types

	EnableBrotli    bool     `json:"enableBrotli"`    // enable-brotli (Debian's libnginx-mod-http-brotli-filter)
	BrotliLevel     int      `json:"brotliLevel"`     // brotli-level, 0 to 11
	BrotliMinLength int      `json:"brotliMinLength"` // brotli-min-length, bytes
	BrotliTypes     []string `json:"brotliTypes"`     // brotli-types, space-separated MIME types

	// AccessLogPath is access-log-path: an absolute file path, or "" (the
	// default) to let the run flag --access-log decide.
	AccessLogPath       string   `json:"accessLogPath"`
	DisableAccessLog    bool     `json:"disableAccessLog"`    // disable-access-log
	SkipAccessLogURLs   []string `json:"skipAccessLogURLs"`   // skip-access-log-urls: request URIs not logged
	LogFormatEscapeJSON bool     `json:"logFormatEscapeJSON"` // log-format-escape-json
	LogFormatEscapeNone bool     `json:"logFormatEscapeNone"` // log-format-escape-none (wins over JSON, as in ingress-nginx)

	// AddHeaders and ProxySetHeaders are add-headers and proxy-set-headers:
	// "namespace/name" of a ConfigMap whose data are headers added to every
	// response, or sent to every backend; "" for none. The translator
	// resolves them into AddHeaderValues and ProxySetHeaderValues.
	AddHeaders           string            `json:"addHeaders"`
	ProxySetHeaders      string            `json:"proxySetHeaders"`
	AddHeaderValues      map[string]string `json:"addHeaderValues,omitempty"`
	ProxySetHeaderValues map[string]string `json:"proxySetHeaderValues,omitempty"`
	HideHeaders          []string          `json:"hideHeaders"` // hide-headers: response headers of the backend not passed on
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
		SkipAccessLogURLs: []string{}, HideHeaders: []string{},
	}
}
