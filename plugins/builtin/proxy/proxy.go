// Package proxy is the built-in plugin for ingress-nginx's proxy
// annotations: body size and buffering, timeouts and retries, the HTTP
// version, cookie and redirect rewriting, and the Host and Connection
// headers sent upstream. What an Ingress does not set keeps the controller
// ConfigMap's value (written at http level), as in ingress-nginx.
package proxy

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// Annotation keys, relative to the controller's prefix.
const (
	KeyBodySize             = "proxy-body-size"
	KeyClientBodyBufferSize = "client-body-buffer-size"
	KeyBuffering            = "proxy-buffering"
	KeyBuffersNumber        = "proxy-buffers-number"
	KeyBufferSize           = "proxy-buffer-size"
	KeyBusyBuffersSize      = "proxy-busy-buffers-size"
	KeyMaxTempFileSize      = "proxy-max-temp-file-size"
	KeyRequestBuffering     = "proxy-request-buffering"
	KeyConnectTimeout       = "proxy-connect-timeout"
	KeySendTimeout          = "proxy-send-timeout"
	KeyReadTimeout          = "proxy-read-timeout"
	KeyNextUpstream         = "proxy-next-upstream"
	KeyNextUpstreamTimeout  = "proxy-next-upstream-timeout"
	KeyNextUpstreamTries    = "proxy-next-upstream-tries"
	KeyHTTPVersion          = "proxy-http-version"
	KeyCookieDomain         = "proxy-cookie-domain"
	KeyCookiePath           = "proxy-cookie-path"
	KeyRedirectFrom         = "proxy-redirect-from"
	KeyRedirectTo           = "proxy-redirect-to"
	KeyConnectionHeader     = "connection-proxy-header"
	KeyUpstreamVhost        = "upstream-vhost"
	KeyUsePortInRedirects   = "use-port-in-redirects"
	KeyRelativeRedirects    = "relative-redirects"
	// KeyServiceUpstream is read by the translator, which alone knows the
	// Service (stages/translator.serviceUpstreamBackend); the plugin owns
	// it so that its value is checked and documented.
	KeyServiceUpstream = "service-upstream"
)

// First checks by the host, before the plugin sees a value; Parse checks
// the rest (bounds, canonical forms).
const (
	sizeChars     = `[0-9]{1,13}[kKmMgG]?`
	intChars      = `[0-9]{1,9}`
	secondsChars  = `[0-9]{1,9}s?`
	onOff         = `on|off`
	nextUpstream  = `[a-z0-9_ ]{1,200}`
	cookieChars   = `off|[^\s"'$;{}\\]+ +[^\s"'$;{}\\]+`
	redirectChars = `[^\s"'$;{}\\]+`
	connection    = `[A-Za-z0-9, -]{1,600}`
	vhostChars    = `[-._~a-zA-Z0-9:\[\]]{1,260}`
	boolValues    = `1|t|T|TRUE|true|True|0|f|F|FALSE|false|False`
)

// Plugin implements plugins.IngressPlugin.
type Plugin struct{}

// New returns the plugin.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

var ann = plugins.LocationAnnotation

// Describe implements plugins.Plugin.
func (Plugin) Describe() plugins.Description {
	return plugins.Description{
		Name: "proxy",
		Doc:  "How a location talks to its backend: body size, buffering, timeouts, retries, HTTP version, cookie and redirect rewriting, Host and Connection headers, as ingress-nginx. Unset keys keep the controller ConfigMap's value.",
		Annotations: []plugins.Annotation{
			ann(KeyBodySize, sizeChars, plugins.RiskMedium, "1m", "Largest request body (client_max_body_size); 0 is no limit; at most 1024g. Bigger bodies get 413."),
			ann(KeyClientBodyBufferSize, sizeChars, plugins.RiskLow, "8k", "Buffer for the request body (client_body_buffer_size); larger bodies go to a temporary file. 1 byte to 256m, units k or m."),
			ann(KeyBuffering, onOff, plugins.RiskLow, "off", "Buffer responses from the backend (proxy_buffering): on or off."),
			ann(KeyBuffersNumber, intChars, plugins.RiskLow, "4", "Number of response buffers (proxy_buffers), 2 to 1024; each is proxy-buffer-size."),
			ann(KeyBufferSize, sizeChars, plugins.RiskLow, "4k", "Size of the buffer for the response head, and of each proxy_buffers buffer. 1 byte to 256m, units k or m."),
			ann(KeyBusyBuffersSize, sizeChars, plugins.RiskLow, "", "Limit of buffers busy sending to the client (proxy_busy_buffers_size). Unset: twice proxy-buffer-size, kept within what NGINX accepts."),
			ann(KeyMaxTempFileSize, sizeChars, plugins.RiskLow, "1024m", "Largest temporary file for a buffered response (proxy_max_temp_file_size); 0 turns them off; at most 1024g."),
			ann(KeyRequestBuffering, onOff, plugins.RiskLow, "on", "Read the whole request body before proxying it (proxy_request_buffering): on or off."),
			ann(KeyConnectTimeout, secondsChars, plugins.RiskLow, "5", "Seconds to connect to the backend (proxy_connect_timeout), 1 to 31536000; a trailing s is accepted."),
			ann(KeySendTimeout, secondsChars, plugins.RiskLow, "60", "Seconds between two writes to the backend (proxy_send_timeout), 1 to 31536000; a trailing s is accepted."),
			ann(KeyReadTimeout, secondsChars, plugins.RiskLow, "60", "Seconds between two reads from the backend (proxy_read_timeout), 1 to 31536000, a trailing s accepted; then 504."),
			ann(KeyNextUpstream, nextUpstream, plugins.RiskMedium, "error timeout", "When to try another endpoint (proxy_next_upstream): "+strings.Join(features.NextUpstreamConditions, ", ")+", separated by spaces."),
			ann(KeyNextUpstreamTimeout, secondsChars, plugins.RiskLow, "0", "Seconds within which another endpoint may be tried (proxy_next_upstream_timeout); 0 is no limit."),
			ann(KeyNextUpstreamTries, intChars, plugins.RiskLow, "3", "Most endpoints tried for one request (proxy_next_upstream_tries), 0 (no limit) to 100."),
			ann(KeyHTTPVersion, `1\.0|1\.1`, plugins.RiskLow, "1.1", "HTTP version to the backend (proxy_http_version): 1.0 or 1.1."),
			ann(KeyCookieDomain, cookieChars, plugins.RiskMedium, "off", `Rewrites the domain of Set-Cookie headers (proxy_cookie_domain): "off" or "FROM TO", both domain names.`),
			ann(KeyCookiePath, cookieChars, plugins.RiskMedium, "off", `Rewrites the path of Set-Cookie headers (proxy_cookie_path): "off" or "FROM TO", both paths.`),
			ann(KeyRedirectFrom, redirectChars, plugins.RiskMedium, "off", `First argument of proxy_redirect: "off", "default", or the URL or path to replace in Location and Refresh headers (no regexes or variables).`),
			ann(KeyRedirectTo, redirectChars, plugins.RiskMedium, "off", `Second argument of proxy_redirect: the replacement URL or path, used with a URL in proxy-redirect-from.`),
			ann(KeyConnectionHeader, connection, plugins.RiskLow, "", "Connection header sent to the backend instead of the default (upgrade for WebSocket requests, else empty), e.g. keep-alive or close."),
			ann(KeyUpstreamVhost, vhostChars, plugins.RiskLow, "", "Host header sent to the backend instead of the request's host: a host name or address with an optional port."),
			ann(KeyUsePortInRedirects, boolValues, plugins.RiskLow, "false", "true: redirects NGINX makes itself (a directory without its slash) keep the port (port_in_redirect)."),
			ann(KeyRelativeRedirects, boolValues, plugins.RiskLow, "false", "true: redirects NGINX makes itself carry a relative Location (absolute_redirect off)."),
			ann(KeyServiceUpstream, boolValues, plugins.RiskLow, "false", "Proxy to the Service's cluster IP and port (kube-proxy balances) instead of its endpoints. A headless Service keeps its endpoints, with a warning. Without the annotation, the controller ConfigMap's service-upstream decides."),
		},
	}
}

// ApplyIngress implements plugins.IngressPlugin.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (f plugins.Features, errs []plugins.Error) {
	f.Proxy, errs = Parse(in.Annotations)
	return f, errs
}

// parser reads the annotations of one Ingress into p, collecting errors.
type parser struct {
	a    map[string]string
	p    features.Proxy
	errs []plugins.Error
}

// Parse turns one Ingress's proxy annotations into the Proxy group (nil
// when none is set) and the problems found. Any invalid value rejects the
// Ingress: serving it with the ConfigMap's value instead would be silent.
func Parse(a map[string]string) (*features.Proxy, []plugins.Error) {
	ps := &parser{a: a}
	ps.sizes()
	ps.timeouts()
	ps.rewrites()
	if len(ps.errs) > 0 || ps.p == (features.Proxy{}) {
		return nil, ps.errs
	}
	if err := ps.buffersFit(); err != nil {
		return nil, []plugins.Error{*err}
	}
	return &ps.p, nil
}

func (ps *parser) fail(key, format string, args ...any) {
	ps.errs = append(ps.errs, plugins.Errorf(key, format, args...))
}

// str runs parse on the key's value, when the key is set, and stores it.
func (ps *parser) str(key string, dst *string, parse func(string) (string, error)) {
	v, ok := ps.a[key]
	if !ok {
		return
	}
	got, err := parse(strings.TrimSpace(v))
	if err != nil {
		ps.fail(key, "%q: %v", cut(v), err)
		return
	}
	*dst = got
}

// num reads a whole number from lo to hi.
func (ps *parser) num(key string, lo, hi int, unit string) (int, bool) {
	v, ok := ps.a[key]
	if !ok {
		return 0, false
	}
	v = strings.TrimSpace(v)
	n, err := strconv.Atoi(v)
	if err != nil || strings.Trim(v, "0123456789") != "" || n < lo || n > hi {
		ps.fail(key, "%q is not a whole number from %d to %d (%s)", cut(v), lo, hi, unit)
		return 0, false
	}
	return n, true
}

// seconds reads a timeout from lo to features.MaxProxyTimeout seconds.
func (ps *parser) seconds(key string, lo int) (int, bool) {
	v, ok := ps.a[key]
	if !ok {
		return 0, false
	}
	n, ok := features.ParseSeconds(strings.TrimSpace(v), lo, features.MaxProxyTimeout)
	if !ok {
		ps.fail(key, "%q is not a number of seconds from %d to %d", cut(v), lo, features.MaxProxyTimeout)
	}
	return n, ok
}

func (ps *parser) sizes() {
	ps.str(KeyBodySize, &ps.p.BodySize, features.ParseBodySize)
	ps.str(KeyMaxTempFileSize, &ps.p.MaxTempFileSize, features.ParseBodySize)
	ps.str(KeyClientBodyBufferSize, &ps.p.ClientBodyBufferSize, features.ParseBufferSize)
	ps.str(KeyBufferSize, &ps.p.BufferSize, features.ParseBufferSize)
	ps.str(KeyBusyBuffersSize, &ps.p.BusyBuffersSize, features.ParseBufferSize)
	if n, ok := ps.num(KeyBuffersNumber, 2, features.MaxBuffersNumber, "buffers"); ok {
		ps.p.BuffersNumber = n
	}
	ps.str(KeyBuffering, &ps.p.Buffering, onOrOff)
	ps.str(KeyRequestBuffering, &ps.p.RequestBuffering, onOrOff)
}

func (ps *parser) timeouts() {
	for _, t := range []struct {
		key string
		dst *int
	}{{KeyConnectTimeout, &ps.p.ConnectTimeout}, {KeySendTimeout, &ps.p.SendTimeout}, {KeyReadTimeout, &ps.p.ReadTimeout}} {
		if n, ok := ps.seconds(t.key, 1); ok {
			*t.dst = n
		}
	}
	ps.str(KeyNextUpstream, &ps.p.NextUpstream, features.ParseNextUpstream)
	if n, ok := ps.seconds(KeyNextUpstreamTimeout, 0); ok {
		ps.p.NextUpstreamTimeout = &n
	}
	if n, ok := ps.num(KeyNextUpstreamTries, 0, features.MaxUpstreamTries, "tries, 0 is no limit"); ok {
		ps.p.NextUpstreamTries = &n
	}
}

func (ps *parser) rewrites() {
	ps.str(KeyHTTPVersion, &ps.p.HTTPVersion, oneOf("1.0", "1.1"))
	ps.str(KeyCookieDomain, &ps.p.CookieDomain, func(v string) (string, error) {
		return features.ParseCookieRewrite(v, features.CookieDomainPattern)
	})
	ps.str(KeyCookiePath, &ps.p.CookiePath, func(v string) (string, error) {
		return features.ParseCookieRewrite(v, features.CookiePathPattern)
	})
	ps.str(KeyRedirectFrom, &ps.p.RedirectFrom, func(v string) (string, error) {
		if v == "off" || v == "default" {
			return v, nil
		}
		return redirectURL(v)
	})
	ps.str(KeyRedirectTo, &ps.p.RedirectTo, func(v string) (string, error) {
		if v == "off" {
			return v, nil
		}
		return redirectURL(v)
	})
	ps.str(KeyConnectionHeader, &ps.p.ConnectionHeader, matching(features.ConnectionHeaderPattern.MatchString, "a Connection header value: tokens such as keep-alive, close or upgrade, separated by commas"))
	if v, ok := ps.a[KeyServiceUpstream]; ok {
		if _, err := strconv.ParseBool(strings.TrimSpace(v)); err != nil {
			ps.fail(KeyServiceUpstream, "%q is not true or false", cut(v))
		}
	}
	ps.str(KeyUpstreamVhost, &ps.p.UpstreamVhost, matching(features.ValidUpstreamVhost, "a host name or address with an optional port (no $, quotes or spaces)"))
	ps.str(KeyUsePortInRedirects, &ps.p.PortInRedirect, boolToOnOff(false))
	ps.str(KeyRelativeRedirects, &ps.p.AbsoluteRedirect, boolToOnOff(true))
	if ps.p.RedirectTo != "" && ps.p.RedirectTo != "off" && !isURLOrPath(ps.p.RedirectFrom) {
		ps.fail(KeyRedirectTo, "is used only with a URL or path in %s, which is %q", KeyRedirectFrom, orDefault(ps.p.RedirectFrom, "off"))
	}
}

// boolToOnOff reads a boolean annotation as NGINX's on or off, inverted
// for a directive that says the opposite of the annotation
// (relative-redirects true is absolute_redirect off).
func boolToOnOff(invert bool) func(string) (string, error) {
	return func(v string) (string, error) {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return "", fmt.Errorf("not true or false")
		}
		if b != invert {
			return "on", nil
		}
		return "off", nil
	}
}

// buffersFit checks proxy-busy-buffers-size against the buffers this
// Ingress sets, with NGINX's rules (nginx -t refuses the configuration
// otherwise): at least one buffer, less than all buffers but one. The
// renderer checks again against the ConfigMap's values.
func (ps *parser) buffersFit() *plugins.Error {
	p := ps.p
	if p.BusyBuffersSize == "" || p.BufferSize == "" || p.BuffersNumber == 0 {
		return nil
	}
	busy, size := features.SizeBytes(p.BusyBuffersSize), features.SizeBytes(p.BufferSize)
	if busy < size || busy > int64(p.BuffersNumber-1)*size {
		e := plugins.Errorf(KeyBusyBuffersSize, "%s must be at least %s (%s) and at most (%s - 1) x %s, as NGINX requires",
			p.BusyBuffersSize, KeyBufferSize, p.BufferSize, KeyBuffersNumber, p.BufferSize)
		return &e
	}
	return nil
}

func isURLOrPath(v string) bool { return v != "" && v != "off" && v != "default" }

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func redirectURL(v string) (string, error) {
	if len(v) > 1024 || !features.ProxyRedirectPattern.MatchString(v) {
		return "", fmt.Errorf("not an http(s) URL or a path (no ~ at the start, $, quotes, ;, braces or spaces)")
	}
	return v, nil
}

func onOrOff(v string) (string, error) { return oneOf("on", "off")(v) }

func oneOf(options ...string) func(string) (string, error) {
	return func(v string) (string, error) {
		for _, o := range options {
			if v == o {
				return v, nil
			}
		}
		return "", fmt.Errorf("want one of %s", strings.Join(options, ", "))
	}
}

func matching(match func(string) bool, what string) func(string) (string, error) {
	return func(v string) (string, error) {
		if !match(v) {
			return "", fmt.Errorf("want %s", what)
		}
		return v, nil
	}
}

func cut(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}
