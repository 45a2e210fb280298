package features

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Proxy is the proxy plugin's group: how a location talks to its backend
// (body size, buffering, timeouts, retries, HTTP version, cookie and
// redirect rewriting, the Host and Connection headers sent upstream). An
// empty field keeps what the controller ConfigMap sets at http level:
// NGINX's inheritance is ingress-nginx's annotation-over-ConfigMap rule.
type Proxy struct {
	// Sizes are NGINX sizes, canonical ("30m", "512k", "0"): BodySize and
	// MaxTempFileSize by ParseBodySize, the buffers by ParseBufferSize.
	BodySize             string `json:"bodySize,omitempty"`             // proxy-body-size
	ClientBodyBufferSize string `json:"clientBodyBufferSize,omitempty"` // client-body-buffer-size
	BufferSize           string `json:"bufferSize,omitempty"`           // proxy-buffer-size
	BusyBuffersSize      string `json:"busyBuffersSize,omitempty"`      // proxy-busy-buffers-size
	MaxTempFileSize      string `json:"maxTempFileSize,omitempty"`      // proxy-max-temp-file-size
	BuffersNumber        int    `json:"buffersNumber,omitempty"`        // proxy-buffers-number
	// Buffering and RequestBuffering are "on" or "off".
	Buffering        string `json:"buffering,omitempty"`        // proxy-buffering
	RequestBuffering string `json:"requestBuffering,omitempty"` // proxy-request-buffering

	// Timeouts in seconds, 0 when not set.
	ConnectTimeout int `json:"connectTimeout,omitempty"` // proxy-connect-timeout
	SendTimeout    int `json:"sendTimeout,omitempty"`    // proxy-send-timeout
	ReadTimeout    int `json:"readTimeout,omitempty"`    // proxy-read-timeout
	// NextUpstream is proxy-next-upstream, its conditions space-separated.
	NextUpstream string `json:"nextUpstream,omitempty"`
	// NextUpstreamTimeout (seconds) and NextUpstreamTries: 0 means no
	// limit in NGINX, so nil is "not set".
	NextUpstreamTimeout *int `json:"nextUpstreamTimeout,omitempty"`
	NextUpstreamTries   *int `json:"nextUpstreamTries,omitempty"`

	HTTPVersion string `json:"httpVersion,omitempty"` // proxy-http-version: "1.0" or "1.1"
	// CookieDomain and CookiePath are "off" or "FROM TO".
	CookieDomain string `json:"cookieDomain,omitempty"` // proxy-cookie-domain
	CookiePath   string `json:"cookiePath,omitempty"`   // proxy-cookie-path
	// RedirectFrom is "off", "default" or a URL; RedirectTo a URL (used
	// only with a URL in RedirectFrom) or "off".
	RedirectFrom string `json:"redirectFrom,omitempty"` // proxy-redirect-from
	RedirectTo   string `json:"redirectTo,omitempty"`   // proxy-redirect-to
	// ConnectionHeader replaces the Connection header sent upstream
	// (connection-proxy-header), "" keeps the upgrade-aware default.
	ConnectionHeader string `json:"connectionHeader,omitempty"`
	// UpstreamVhost is the Host header sent upstream (upstream-vhost).
	UpstreamVhost string `json:"upstreamVhost,omitempty"`
	// PortInRedirect (use-port-in-redirects) and AbsoluteRedirect (off
	// with relative-redirects) are "on" or "off": how NGINX writes the
	// Location of the redirects it makes itself.
	PortInRedirect   string `json:"portInRedirect,omitempty"`
	AbsoluteRedirect string `json:"absoluteRedirect,omitempty"`
}

// Bounds of the proxy values. A body or temporary file of more than 1 TiB
// is not a real setting but a typo (100000000g); a buffer is allocated per
// request, so a buffer is kept far smaller.
const (
	MaxBodySize      = int64(1) << 40
	MaxBufferSize    = int64(256) << 20
	MaxBuffersNumber = 1024
	// MaxProxyTimeout is a year: long-lived WebSocket and streaming
	// connections in the wild ask for 30 days (2592000).
	MaxProxyTimeout   = 365 * 24 * 3600
	MaxUpstreamTries  = 100
	maxProxyValueLen  = 512
	maxNextUpstreamLn = 200
)

// ParseSeconds reads a timeout in whole seconds from lo to hi. A trailing
// "s" is accepted: ingress-nginx 1.11 began ignoring "3600s", which users
// had written for years because it is how NGINX spells seconds, and then
// quietly applied 60 s (kubernetes/ingress-nginx#11850).
func ParseSeconds(v string, lo, hi int) (int, bool) {
	digits := strings.TrimSuffix(v, "s")
	if digits == "" || len(digits) > 9 || strings.Trim(digits, "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	return n, err == nil && n >= lo && n <= hi
}

var (
	// NextUpstreamConditions are proxy_next_upstream's conditions that
	// ingress-nginx accepts.
	NextUpstreamConditions = []string{"error", "timeout", "invalid_header", "http_500", "http_502", "http_503",
		"http_504", "http_403", "http_404", "http_429", "non_idempotent", "off"}
	// CookieDomainPattern is a cookie domain: host name characters, an
	// optional leading dot.
	CookieDomainPattern = regexp.MustCompile(`^\.?[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$`)
	// CookiePathPattern is a path without quotes, backslashes, "$", ";",
	// braces or spaces.
	CookiePathPattern = regexp.MustCompile(`^/[A-Za-z0-9._~!&()*+,=:@%/-]*$`)
	// ProxyRedirectPattern is what proxy_redirect replaces or puts in: an
	// absolute http(s) URL or a path, without "~" at the start (a regex),
	// "$" (a variable), quotes, backslashes, ";", braces or spaces.
	ProxyRedirectPattern = regexp.MustCompile(`^(https?://[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?)?/[A-Za-z0-9._~!&()*+,=:@%/?#-]*$|^https?://[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?$`)
	// ConnectionHeaderPattern is a Connection header value: tokens
	// separated by ", " (keep-alive, close, upgrade).
	ConnectionHeaderPattern = regexp.MustCompile(`^[A-Za-z0-9-]{1,64}(, ?[A-Za-z0-9-]{1,64}){0,7}$`)
)

// ParseBodySize reads a body or file size (client_max_body_size,
// proxy_max_temp_file_size): digits with an optional k, m or g, at most
// MaxBodySize; "0" is no limit. It returns the lower-case spelling.
func ParseBodySize(v string) (string, error) { return parseSize(v, MaxBodySize, "kmg", "1024g") }

// ParseBufferSize reads a buffer size (proxy_buffer_size,
// client_body_buffer_size...): digits with an optional k or m, from 1 byte
// to MaxBufferSize. NGINX 1.22 has no g for these.
func ParseBufferSize(v string) (string, error) {
	s, err := parseSize(v, MaxBufferSize, "km", "256m")
	if err == nil && SizeBytes(s) == 0 {
		return "", fmt.Errorf("a buffer size must be more than 0")
	}
	return s, err
}

func parseSize(v string, max int64, units, maxText string) (string, error) {
	digits, unit, ok := splitSize(v)
	if !ok {
		return "", fmt.Errorf("not an NGINX size: want digits with an optional unit (%s), such as 8k or 30m", strings.Join(strings.Split(units, ""), ", "))
	}
	lower := strings.ToLower(unit)
	if unit != "" && !strings.Contains(units, lower) {
		return "", fmt.Errorf("the unit %s is not accepted here (use %s)", unit, strings.Join(strings.Split(units, ""), " or "))
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n > max/unitBytes(lower) {
		return "", fmt.Errorf("%s is over the limit of %s", v, maxText)
	}
	return strconv.FormatInt(n, 10) + lower, nil
}

// splitSize splits an NGINX size, 1 to 13 digits and an optional unit (k,
// m or g, either case), into its digits and unit. It is the whole-string
// pattern ^([0-9]{1,13})([kKmMgG]?)$ spelt out: the host checks every
// size a plugin returns, and a regex per size was a tenth of the
// annotations stage's time at 10,000 Ingresses (FuzzSplitSize holds the
// two equal).
func splitSize(v string) (digits, unit string, ok bool) {
	digits = v
	if n := len(v); n > 0 && strings.IndexByte("kKmMgG", v[n-1]) >= 0 {
		digits, unit = v[:n-1], v[n-1:]
	}
	if digits == "" || len(digits) > 13 || strings.Trim(digits, "0123456789") != "" {
		return "", "", false
	}
	return digits, unit, true
}

func unitBytes(unit string) int64 {
	switch unit {
	case "k":
		return 1 << 10
	case "m":
		return 1 << 20
	case "g":
		return 1 << 30
	}
	return 1
}

// SizeBytes is a canonical size (from ParseBodySize or ParseBufferSize)
// in bytes, -1 if it is not one.
func SizeBytes(s string) int64 {
	digits, unit, ok := splitSize(s)
	if !ok {
		return -1
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return -1
	}
	return n * unitBytes(strings.ToLower(unit))
}

// ParseNextUpstream reads proxy_next_upstream's conditions, separated by
// white space; it returns them single-spaced and without repeats.
func ParseNextUpstream(v string) (string, error) {
	words := strings.Fields(v)
	if len(words) == 0 || len(v) > maxNextUpstreamLn {
		return "", fmt.Errorf("want one or more of %s separated by spaces", strings.Join(NextUpstreamConditions, ", "))
	}
	var out []string
	for _, w := range words {
		if !contains(NextUpstreamConditions, w) {
			return "", fmt.Errorf("%q is not one of %s", w, strings.Join(NextUpstreamConditions, ", "))
		}
		if !contains(out, w) {
			out = append(out, w)
		}
	}
	return strings.Join(out, " "), nil
}

// ParseCookieRewrite reads proxy-cookie-domain or proxy-cookie-path: "off",
// or the value to replace and its replacement, separated by a space.
func ParseCookieRewrite(v string, part *regexp.Regexp) (string, error) {
	if v == "off" {
		return v, nil
	}
	words := strings.Fields(v)
	if len(v) > 2*maxProxyValueLen || len(words) != 2 || !part.MatchString(words[0]) || !part.MatchString(words[1]) {
		return "", fmt.Errorf(`want "off" or two values separated by a space, each matching %s`, part)
	}
	return words[0] + " " + words[1], nil
}

// checkCookieRewrite checks a canonical cookie rewrite; "" is unset. It
// parses only what is set: most Ingresses set neither.
func checkCookieRewrite(v string, part *regexp.Regexp) error {
	if v == "" {
		return nil
	}
	got, err := ParseCookieRewrite(v, part)
	if err == nil && got != v {
		err = fmt.Errorf("%q is not canonical", v)
	}
	return err
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (p *Proxy) validate() error {
	if p == nil {
		return nil
	}
	for _, s := range []struct{ name, v string }{{"bodySize", p.BodySize}, {"maxTempFileSize", p.MaxTempFileSize}} {
		if s.v == "" {
			continue
		}
		if got, err := ParseBodySize(s.v); err != nil || got != s.v {
			return fmt.Errorf("%s %q is not a canonical size up to 1024g", s.name, s.v)
		}
	}
	for _, s := range []struct{ name, v string }{{"clientBodyBufferSize", p.ClientBodyBufferSize},
		{"bufferSize", p.BufferSize}, {"busyBuffersSize", p.BusyBuffersSize}} {
		if s.v == "" {
			continue
		}
		if got, err := ParseBufferSize(s.v); err != nil || got != s.v {
			return fmt.Errorf("%s %q is not a canonical buffer size up to 256m", s.name, s.v)
		}
	}
	if p.BuffersNumber != 0 && (p.BuffersNumber < 2 || p.BuffersNumber > MaxBuffersNumber) {
		return fmt.Errorf("buffersNumber %d is not from 2 to %d", p.BuffersNumber, MaxBuffersNumber)
	}
	for _, s := range []struct{ name, v string }{{"buffering", p.Buffering}, {"requestBuffering", p.RequestBuffering},
		{"portInRedirect", p.PortInRedirect}, {"absoluteRedirect", p.AbsoluteRedirect}} {
		if s.v != "" && s.v != "on" && s.v != "off" {
			return fmt.Errorf("%s %q is not on or off", s.name, s.v)
		}
	}
	return p.validateTimeouts()
}

func (p *Proxy) validateTimeouts() error {
	for _, t := range []struct {
		name string
		v    int
	}{{"connectTimeout", p.ConnectTimeout}, {"sendTimeout", p.SendTimeout}, {"readTimeout", p.ReadTimeout}} {
		if t.v < 0 || t.v > MaxProxyTimeout {
			return fmt.Errorf("%s %d is not from 1 to %d seconds", t.name, t.v, MaxProxyTimeout)
		}
	}
	if p.NextUpstream != "" {
		if got, err := ParseNextUpstream(p.NextUpstream); err != nil || got != p.NextUpstream {
			return fmt.Errorf("nextUpstream %q is not a canonical list of conditions", p.NextUpstream)
		}
	}
	if t := p.NextUpstreamTimeout; t != nil && (*t < 0 || *t > MaxProxyTimeout) {
		return fmt.Errorf("nextUpstreamTimeout %d is not from 0 to %d seconds", *t, MaxProxyTimeout)
	}
	if t := p.NextUpstreamTries; t != nil && (*t < 0 || *t > MaxUpstreamTries) {
		return fmt.Errorf("nextUpstreamTries %d is not from 0 to %d", *t, MaxUpstreamTries)
	}
	return p.validateRewrites()
}

func (p *Proxy) validateRewrites() error {
	if p.HTTPVersion != "" && p.HTTPVersion != "1.0" && p.HTTPVersion != "1.1" {
		return fmt.Errorf("httpVersion %q is not 1.0 or 1.1", p.HTTPVersion)
	}
	if err := checkCookieRewrite(p.CookieDomain, CookieDomainPattern); err != nil {
		return fmt.Errorf("cookieDomain: %w", err)
	}
	if err := checkCookieRewrite(p.CookiePath, CookiePathPattern); err != nil {
		return fmt.Errorf("cookiePath: %w", err)
	}
	switch p.RedirectFrom {
	case "", "off", "default":
	default:
		if len(p.RedirectFrom) > maxProxyValueLen*2 || !ProxyRedirectPattern.MatchString(p.RedirectFrom) {
			return fmt.Errorf("redirectFrom is not off, default, or a URL or path without ~ at the start, quotes, $, ;, braces or spaces")
		}
	}
	if p.RedirectTo != "" && p.RedirectTo != "off" && (len(p.RedirectTo) > maxProxyValueLen*2 || !ProxyRedirectPattern.MatchString(p.RedirectTo)) {
		return fmt.Errorf("redirectTo is not off, or a URL or path without quotes, $, ;, braces or spaces")
	}
	if p.ConnectionHeader != "" && !ConnectionHeaderPattern.MatchString(p.ConnectionHeader) {
		return fmt.Errorf("connectionHeader %q is not a list of tokens", p.ConnectionHeader)
	}
	if p.UpstreamVhost != "" && !ValidUpstreamVhost(p.UpstreamVhost) {
		return fmt.Errorf("upstreamVhost is not a host name with an optional port")
	}
	return nil
}

// ValidUpstreamVhost says whether v is an upstream-vhost: a host name or
// address with an optional port, as ingress-nginx validates it, without
// "$" (which NGINX would read as a variable). It is the whole-string
// pattern
//
//	^[A-Za-z0-9_]([A-Za-z0-9._~-]{0,252})(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?$
//
// spelt out (FuzzValidUpstreamVhost holds the two equal): the plugin and
// the host each check every value, and that regex ran on Go's slowest
// matcher, a tenth of the proxy plugin's time at 10,000 Ingresses.
func ValidUpstreamVhost(v string) bool {
	host, port := v, ""
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return false
		}
		host, port = v[1:end], v[end+1:]
		if len(host) < 2 || len(host) > 45 || !allIn(host, isIPv6Char) {
			return false
		}
	} else {
		if i := strings.IndexByte(v, ':'); i >= 0 {
			host, port = v[:i], v[i:]
		}
		if host == "" || len(host) > 253 || !isVhostFirst(host[0]) || !allIn(host[1:], isVhostChar) {
			return false
		}
	}
	if port == "" {
		return true
	}
	digits, ok := strings.CutPrefix(port, ":")
	return ok && digits != "" && len(digits) <= 5 && allIn(digits, isDigit)
}

func allIn(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isLetterOrDigit(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

func isVhostFirst(c byte) bool { return isLetterOrDigit(c) || c == '_' }

func isVhostChar(c byte) bool { return isVhostFirst(c) || c == '.' || c == '~' || c == '-' }

func isIPv6Char(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F') || c == ':' || c == '.'
}

// BusyBuffersFit is what NGINX requires of proxy_busy_buffers_size: from
// the buffer size to (number - 1) x the buffer size.
func BusyBuffersFit(size string, number int, busy string) error {
	bytes, b := SizeBytes(size), SizeBytes(busy)
	if bytes <= 0 || number < 2 {
		return fmt.Errorf("invalid proxy buffer size %q or number %d", size, number)
	}
	if most := int64(number-1) * bytes; b < bytes || b > most {
		return fmt.Errorf("proxy-busy-buffers-size %s must be from proxy-buffer-size (%s) to (proxy-buffers-number - 1) x proxy-buffer-size (%d bytes), as NGINX requires",
			busy, size, most)
	}
	return nil
}

// MaxTempFileFits is what NGINX requires of proxy_max_temp_file_size: 0,
// or at least the buffer size.
func MaxTempFileFits(max, bufferSize string) error {
	if m := SizeBytes(max); m != 0 && m < SizeBytes(bufferSize) {
		return fmt.Errorf("proxy-max-temp-file-size %s must be 0 or at least proxy-buffer-size (%s), as NGINX requires", max, bufferSize)
	}
	return nil
}
