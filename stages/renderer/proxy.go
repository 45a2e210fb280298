package renderer

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// The proxy settings: the controller ConfigMap's at http level, a
// location's proxy-* annotations in the location. NGINX's inheritance is
// ingress-nginx's precedence: what an Ingress sets wins, the rest comes
// from the ConfigMap. Both levels are written by proxyDirectives, so they
// cannot drift apart.

// proxyView is a location's proxy part (proxy plugin).
type proxyView struct {
	// Lines are directives without their ";", every argument a checked
	// word or quoted.
	Lines []string
	// Redirect is the proxy_redirect line, "" when not set: written after
	// proxy_pass, which NGINX wants before proxy_redirect default.
	Redirect string
	// UpstreamVhost and ConnectionHeader set the variables the http
	// block's Host and Connection request headers read; quoted, "" when
	// not set.
	UpstreamVhost, ConnectionHeader string
}

// sourcedLine is one http-level directive with its attribution comment.
type sourcedLine struct{ Src, Line string }

// proxyWordPattern is what an unquoted argument may be: sizes, times,
// counts, on/off, condition names.
var proxyWordPattern = regexp.MustCompile(`^[A-Za-z0-9_.]{1,64}$`)

// directives collects lines, checking every unquoted argument.
type directives struct {
	lines []string
	err   error
}

func (d *directives) add(name string, args ...string) {
	for _, a := range args {
		if !proxyWordPattern.MatchString(a) && !isQuoted(a) && d.err == nil {
			d.err = fmt.Errorf("%s: refusing to write %q into nginx.conf", name, a)
		}
	}
	d.lines = append(d.lines, name+" "+strings.Join(args, " "))
}

// addQuoted adds a directive of one argument, written quoted.
func (d *directives) addQuoted(name, v string) {
	q, err := quote(v)
	if err != nil && d.err == nil {
		d.err = fmt.Errorf("%s: %w", name, err)
	}
	d.add(name, q)
}

func isQuoted(a string) bool {
	if len(a) < 2 || a[0] != '"' || a[len(a)-1] != '"' {
		return false
	}
	_, err := quote(a[1 : len(a)-1])
	return err == nil
}

// newProxyView resolves a location's proxy group against the ConfigMap's
// settings; nil when the location sets none. limitRate says the location
// has limit-rate, whose rate limit part turns proxy_buffering on (NGINX
// rate-limits only buffered responses), so proxy-buffering is not written
// twice there.
func newProxyView(f *bus.Features, s bus.Settings, limitRate bool) (*proxyView, error) {
	if f == nil || f.Proxy == nil {
		return nil, nil
	}
	p := *f.Proxy
	if limitRate {
		p.Buffering = ""
	}
	lines, err := proxyDirectives(p, s)
	if err != nil {
		return nil, err
	}
	v := &proxyView{}
	for _, l := range lines {
		if strings.HasPrefix(l, "proxy_redirect ") {
			v.Redirect = l
		} else {
			v.Lines = append(v.Lines, l)
		}
	}
	if v.UpstreamVhost, err = quoteSet(p.UpstreamVhost); err != nil {
		return nil, err
	}
	if v.ConnectionHeader, err = quoteSet(p.ConnectionHeader); err != nil {
		return nil, err
	}
	return v, nil
}

// proxyDirectives writes the fields p sets; s fills in the ones NGINX
// checks together (the buffers, proxy_redirect's two arguments).
func proxyDirectives(p bus.Proxy, s bus.Settings) ([]string, error) {
	var d directives
	setWord(&d, "client_max_body_size", p.BodySize)
	setWord(&d, "client_body_buffer_size", p.ClientBodyBufferSize)
	setWord(&d, "proxy_buffering", p.Buffering)
	if p.BufferSize != "" || p.BuffersNumber != 0 || p.BusyBuffersSize != "" {
		size, number := or(p.BufferSize, s.ProxyBufferSize), p.BuffersNumber
		if number == 0 {
			number = s.ProxyBuffersNumber
		}
		if err := proxyBuffers(&d, size, number, p.BusyBuffersSize); err != nil {
			return nil, err
		}
	}
	if p.MaxTempFileSize != "" {
		if err := features.MaxTempFileFits(p.MaxTempFileSize, or(p.BufferSize, s.ProxyBufferSize)); err != nil {
			return nil, err
		}
		d.add("proxy_max_temp_file_size", p.MaxTempFileSize)
	}
	setWord(&d, "proxy_request_buffering", p.RequestBuffering)
	setSeconds(&d, "proxy_connect_timeout", p.ConnectTimeout)
	setSeconds(&d, "proxy_send_timeout", p.SendTimeout)
	setSeconds(&d, "proxy_read_timeout", p.ReadTimeout)
	if p.NextUpstream != "" {
		conditions := strings.Fields(p.NextUpstream)
		if s.RetryNonIdempotent && !slices.Contains(conditions, "off") && !slices.Contains(conditions, "non_idempotent") {
			// retry-non-idempotent: POST, LOCK and PATCH may be retried too.
			conditions = append(conditions, "non_idempotent")
		}
		d.add("proxy_next_upstream", conditions...)
	}
	if t := p.NextUpstreamTimeout; t != nil {
		d.add("proxy_next_upstream_timeout", strconv.Itoa(*t)+"s")
	}
	if t := p.NextUpstreamTries; t != nil {
		d.add("proxy_next_upstream_tries", strconv.Itoa(*t))
	}
	setWord(&d, "proxy_http_version", p.HTTPVersion)
	setWord(&d, "port_in_redirect", p.PortInRedirect)
	setWord(&d, "absolute_redirect", p.AbsoluteRedirect)
	if err := cookieRewrite(&d, "proxy_cookie_domain", p.CookieDomain); err != nil {
		return nil, err
	}
	if err := cookieRewrite(&d, "proxy_cookie_path", p.CookiePath); err != nil {
		return nil, err
	}
	if p.RedirectFrom != "" || p.RedirectTo != "" {
		if err := proxyRedirect(&d, or(p.RedirectFrom, s.ProxyRedirectFrom), or(p.RedirectTo, s.ProxyRedirectTo)); err != nil {
			return nil, err
		}
	}
	return d.lines, d.err
}

func setWord(d *directives, name, v string) {
	if v != "" {
		d.add(name, v)
	}
}

func setSeconds(d *directives, name string, v int) {
	if v > 0 {
		d.add(name, strconv.Itoa(v)+"s")
	}
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// proxyBuffers writes proxy_buffer_size, proxy_buffers (number of buffers
// of that size, as ingress-nginx) and proxy_busy_buffers_size, which NGINX
// wants at least one buffer and at most all buffers but one: when it is not
// set, twice the buffer size (NGINX's default) kept within that.
func proxyBuffers(d *directives, size string, number int, busy string) error {
	bytes := features.SizeBytes(size)
	if bytes <= 0 || number < 2 {
		return fmt.Errorf("proxy buffers: invalid size %q or number %d", size, number)
	}
	most := int64(number-1) * bytes
	if busy == "" {
		busy = formatSize(min(2*bytes, most))
	}
	if err := features.BusyBuffersFit(size, number, busy); err != nil {
		return err
	}
	d.add("proxy_buffer_size", size)
	d.add("proxy_buffers", strconv.Itoa(number), size)
	d.add("proxy_busy_buffers_size", busy)
	return nil
}

// formatSize writes bytes in the largest unit that divides them.
func formatSize(b int64) string {
	switch {
	case b%(1<<20) == 0:
		return strconv.FormatInt(b>>20, 10) + "m"
	case b%(1<<10) == 0:
		return strconv.FormatInt(b>>10, 10) + "k"
	}
	return strconv.FormatInt(b, 10)
}

// cookieRewrite writes "off" or the two values, quoted.
func cookieRewrite(d *directives, name, v string) error {
	if v == "" {
		return nil
	}
	if v == "off" {
		d.add(name, "off")
		return nil
	}
	args, err := quotedWords(strings.Fields(v)...)
	if err != nil {
		return err
	}
	d.lines = append(d.lines, name+" "+args)
	return nil
}

// proxyRedirect writes proxy_redirect as ingress-nginx: "off" or
// "default" alone; a URL with its replacement, unless that is "off".
func proxyRedirect(d *directives, from, to string) error {
	switch {
	case from == "off" || from == "default":
		d.add("proxy_redirect", from)
	case to != "off":
		args, err := quotedWords(from, to)
		if err != nil {
			return err
		}
		d.lines = append(d.lines, "proxy_redirect "+args)
	}
	return nil
}

// newHTTPProxyLines are the http block's proxy and client directives from
// the ConfigMap, each after the source comment of its key.
func newHTTPProxyLines(s bus.Settings, src sources) ([]sourcedLine, error) {
	tries, timeout := s.ProxyNextUpstreamTries, s.ProxyNextUpstreamTimeout
	if tries < 0 || timeout < 0 {
		return nil, fmt.Errorf("proxy-next-upstream: negative tries or timeout")
	}
	byKey := []struct {
		key string
		p   bus.Proxy
	}{
		{"proxy-body-size", bus.Proxy{BodySize: s.ProxyBodySize}},
		{"client-body-buffer-size", bus.Proxy{ClientBodyBufferSize: s.ClientBodyBufferSize}},
		{"proxy-buffering", bus.Proxy{Buffering: s.ProxyBuffering}},
		{"proxy-buffer-size", bus.Proxy{BufferSize: s.ProxyBufferSize, BuffersNumber: s.ProxyBuffersNumber, BusyBuffersSize: s.ProxyBusyBuffersSize}},
		{"proxy-max-temp-file-size", bus.Proxy{MaxTempFileSize: s.ProxyMaxTempFileSize}},
		{"proxy-request-buffering", bus.Proxy{RequestBuffering: s.ProxyRequestBuffering}},
		{"proxy-connect-timeout", bus.Proxy{ConnectTimeout: s.ProxyConnectTimeout}},
		{"proxy-send-timeout", bus.Proxy{SendTimeout: s.ProxySendTimeout}},
		{"proxy-read-timeout", bus.Proxy{ReadTimeout: s.ProxyReadTimeout}},
		{"proxy-next-upstream", bus.Proxy{NextUpstream: s.ProxyNextUpstream}},
		{"proxy-next-upstream-timeout", bus.Proxy{NextUpstreamTimeout: &timeout}},
		{"proxy-next-upstream-tries", bus.Proxy{NextUpstreamTries: &tries}},
		{"proxy-http-version", bus.Proxy{HTTPVersion: s.ProxyHTTPVersion}},
		{"proxy-cookie-domain", bus.Proxy{CookieDomain: s.ProxyCookieDomain}},
		{"proxy-cookie-path", bus.Proxy{CookiePath: s.ProxyCookiePath}},
		{"proxy-redirect-from", bus.Proxy{RedirectFrom: s.ProxyRedirectFrom, RedirectTo: s.ProxyRedirectTo}},
		{"use-port-in-redirects", bus.Proxy{PortInRedirect: onOff(s.UsePortInRedirects)}},
		{"relative-redirects", bus.Proxy{AbsoluteRedirect: onOff(!s.RelativeRedirects)}},
	}
	var out []sourcedLine
	for _, k := range byKey {
		lines, err := proxyDirectives(k.p, s)
		if err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %w", k.key, err)
		}
		for _, l := range lines {
			if l == "proxy_redirect default" {
				// NGINX's own default, which it refuses to be told
				// outside a location with proxy_pass.
				continue
			}
			key := k.key
			if strings.HasPrefix(l, "proxy_buffers ") {
				key = "proxy-buffers-number"
			}
			if strings.HasPrefix(l, "proxy_busy_buffers_size ") && s.ProxyBusyBuffersSize != "" {
				key = "proxy-busy-buffers-size"
			}
			out = append(out, sourcedLine{Src: src.configMapSource(key), Line: l})
		}
	}
	return out, nil
}

// newClientLines are the http block's client-side and size directives
// from the ConfigMap (keep-alive, header buffers and timeouts, HTTP/2
// streams, hash sizes), each after the source comment of its key.
func newClientLines(s bus.Settings, src sources) ([]sourcedLine, error) {
	itoa := strconv.Itoa
	byKey := []struct{ key, name, arg string }{
		{"keep-alive", "keepalive_timeout", itoa(s.KeepAlive) + "s"},
		{"keep-alive-requests", "keepalive_requests", itoa(s.KeepAliveRequests)},
		{"client-header-buffer-size", "client_header_buffer_size", s.ClientHeaderBufferSize},
		{"client-header-timeout", "client_header_timeout", itoa(s.ClientHeaderTimeout) + "s"},
		{"client-body-timeout", "client_body_timeout", itoa(s.ClientBodyTimeout) + "s"},
		{"large-client-header-buffers", "large_client_header_buffers", s.LargeClientHeaderBuffers},
		{"http2-max-concurrent-streams", "http2_max_concurrent_streams", itoa(s.HTTP2MaxConcurrentStreams)},
		{"server-name-hash-bucket-size", "server_names_hash_bucket_size", itoa(s.ServerNameHashBucketSize)},
		{"server-name-hash-max-size", "server_names_hash_max_size", itoa(s.ServerNameHashMaxSize)},
		{"variables-hash-bucket-size", "variables_hash_bucket_size", itoa(s.VariablesHashBucketSize)},
		{"variables-hash-max-size", "variables_hash_max_size", itoa(s.VariablesHashMaxSize)},
	}
	var out []sourcedLine
	for _, k := range byKey {
		var d directives
		d.add(k.name, strings.Fields(k.arg)...)
		if d.err != nil {
			return nil, fmt.Errorf("ConfigMap %s: %w", k.key, d.err)
		}
		out = append(out, sourcedLine{Src: src.configMapSource(k.key), Line: d.lines[0]})
	}
	return out, nil
}

// workerConnections is max-worker-connections, or when it is 0
// max-worker-open-files (or 16384 when that is 0 too), as ingress-nginx.
func workerConnections(s bus.Settings) int {
	switch {
	case s.MaxWorkerConnections > 0:
		return s.MaxWorkerConnections
	case s.MaxWorkerOpenFiles > 0:
		return s.MaxWorkerOpenFiles
	}
	return 16384
}
