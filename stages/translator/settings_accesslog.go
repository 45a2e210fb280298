package translator

import (
	"regexp"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// accessLogSettings are the access log keys added after the first ones
// (settings_http.go): which log the http block writes, with which access_log
// parameters, and which requests it leaves out.
var accessLogSettings = map[string]settingParser{
	"disable-http-access-log": boolSetting(func(s *bus.Settings) *bool { return &s.DisableHTTPAccessLog }),
	"http-access-log-path": setting(func(s *bus.Settings) *string { return &s.HTTPAccessLogPath },
		"an absolute file path of 1 to 1024 characters from A-Z a-z 0-9 . _ - / without \"..\", or empty for access-log-path's",
		parseLogPath, identity),
	"access-log-params": setting(func(s *bus.Settings) *bus.AccessLogParams { return &s.AccessLogParams },
		accessLogParamsRule, parseAccessLogParams, formatAccessLogParams),
	"enable-access-log-for-default-backend": boolSetting(func(s *bus.Settings) *bool { return &s.EnableAccessLogForDefaultBackend }),
	"enable-auth-access-log":                boolSetting(func(s *bus.Settings) *bool { return &s.EnableAuthAccessLog }),

	"enable-syslog": boolSetting(func(s *bus.Settings) *bool { return &s.Syslog.Enable }),
	"syslog-host": setting(func(s *bus.Settings) *string { return &s.Syslog.Host },
		"a host name (labels of letters, digits and -, at most 253 characters) or an IP address, or empty for none",
		parseSyslogHost, identity),
	"syslog-port": intSetting(func(s *bus.Settings) *int { return &s.Syslog.Port }, 1, 65535, "a UDP port"),
}

func parseSyslogHost(v string) (string, bool) {
	return v, v == "" || bus.ValidSyslogHost(v)
}

// checkSyslog reports enable-syslog without syslog-host: there is no
// server to send to (NGINX would refuse "syslog:server=:514"), so the logs
// stay where they were (bus.SyslogSettings.Active).
func checkSyslog(s *bus.Settings) []bus.Problem {
	if !s.Syslog.Enable || s.Syslog.Active() {
		return nil
	}
	return []bus.Problem{{Field: "data.syslog-host", Reason: ReasonNoEffect,
		Message: "enable-syslog is on but syslog-host is empty: the logs stay where they were; set syslog-host to the syslog server's name or address"}}
}

const accessLogParamsRule = "space-separated access_log parameters, each at most once: buffer=SIZE (an NGINX buffer size from 1 byte to 256m), " +
	"gzip or gzip=1 to gzip=9, flush=TIME (an NGINX time such as 5s; needs buffer or gzip), if=$variable (a variable name of letters, digits and _); " +
	"or empty for none"

// logVariablePattern is the variable of access_log's if= parameter: a name
// only, so the value is one NGINX variable and nothing else.
var logVariablePattern = regexp.MustCompile(`^\$[A-Za-z_][A-Za-z0-9_]{0,63}$`)

// parseAccessLogParams reads access-log-params. Every parameter is matched
// whole against its own pattern and given at most once, so nothing but
// these four parameters reaches the access_log line.
func parseAccessLogParams(v string) (bus.AccessLogParams, bool) {
	var p bus.AccessLogParams
	for _, word := range strings.Fields(v) {
		name, value, hasValue := strings.Cut(word, "=")
		var field *string
		ok := false
		switch name {
		case "buffer":
			field = &p.Buffer
			_, err := features.ParseBufferSize(value)
			ok = hasValue && err == nil
		case "gzip":
			field = &p.Gzip
			ok = !hasValue || (len(value) == 1 && value[0] >= '1' && value[0] <= '9')
		case "flush":
			field, ok = &p.Flush, hasValue && timePattern.MatchString(value)
		case "if":
			field, ok = &p.If, hasValue && logVariablePattern.MatchString(value)
			value = strings.TrimPrefix(value, "$")
		}
		if !ok || *field != "" {
			return bus.AccessLogParams{}, false
		}
		*field = value
		if name == "gzip" {
			*field = word // "gzip" alone has no value to keep
		}
	}
	// NGINX refuses flush= without a buffer to flush.
	return p, p.Flush == "" || p.Buffer != "" || p.Gzip != ""
}

// formatAccessLogParams writes p as access-log-params spells it, in a
// fixed order.
func formatAccessLogParams(p bus.AccessLogParams) string {
	var words []string
	for _, w := range []struct{ prefix, value string }{{"buffer=", p.Buffer}, {"", p.Gzip}, {"flush=", p.Flush}, {"if=$", p.If}} {
		if w.value != "" {
			words = append(words, w.prefix+w.value)
		}
	}
	return strings.Join(words, " ")
}

// parseGzipDisable reads gzip-disable: ingress-nginx writes the whole value
// as gzip_disable's one argument, a regex matched against User-Agent
// without regard to case, or NGINX's "msie6". The regex must be in the safe
// grammar the block lists use (features.ValidMapMatch), which keeps double
// quotes and NGINX escapes out of the quoted argument.
func parseGzipDisable(v string) (string, bool) {
	if v == "" || v == "msie6" {
		return v, true
	}
	if strings.HasPrefix(v, "*") {
		return "", false // ValidMapMatch would read "~*" as its case flag
	}
	return v, features.ValidMapMatch("~"+v) == nil
}
