package translator

import (
	"fmt"
	"maps"
	"math"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/internal/catalog"
)

// parseSettings reads the controller ConfigMap's data. Every key it knows is
// validated; an invalid value is reported as a Problem (Field "data.<key>",
// Reason "InvalidValue", a Message naming the key, the rule and what is kept)
// and the default for that key stays. No other key passes in silence: one of
// ingress-nginx's keys Switchyard does not implement is reported as
// "NotSupported", one it refuses (snippets, and keys whose absence would
// leave traffic unprotected) as "Refused", and any other as "UnknownKey" (a
// typo). A nil or empty map gives bus.DefaultSettings().
func parseSettings(data map[string]string) (bus.Settings, []bus.Problem) {
	s := bus.DefaultSettings()
	var problems []bus.Problem
	// Walking the keys in order makes the Problems sorted by Field, so the
	// same ConfigMap always gives the same report.
	for _, key := range slices.Sorted(maps.Keys(data)) {
		value := strings.TrimSpace(data[key])
		p, known := settingParsers[key]
		switch {
		case key == modSecuritySnippetKey && readModSecuritySnippet(&s, data[key]):
		case !known:
			problems = append(problems, unparsedKey(key))
		case !p.apply(&s, value):
			problems = append(problems, invalidSetting(&s, key, value, p))
		}
	}
	problems = append(problems, checkProxyBuffers(&s)...)
	problems = append(problems, checkTracing(&s)...)
	problems = append(problems, checkSyslog(&s)...)
	if s.AllowSnippetAnnotations {
		// The key is read (it changes how a snippet's refusal reads) but
		// cannot do what it asks for.
		problems = append(problems, bus.Problem{Field: "data.allow-snippet-annotations", Reason: ReasonRefused,
			Message: "allow-snippet-annotations: Switchyard never renders snippets; snippet annotations stay refused"})
		slices.SortStableFunc(problems, func(a, b bus.Problem) int { return strings.Compare(a.Field, b.Field) })
	}
	return s, problems
}

// invalidSetting reports an invalid value of key and keeps the key's
// default, or, for a key that fails closed, marks it unreadable.
func invalidSetting(s *bus.Settings, key, value string, p settingParser) bus.Problem {
	problem := bus.Problem{Field: "data." + key, Reason: ReasonInvalidValue}
	if p.failClosed {
		s.MarkUnreadable(key)
		problem.Message = fmt.Sprintf("%s: %s is invalid, it must be %s; it cannot be enforced, so every location it applies to answers 403 until it is fixed",
			key, clipQuoted(value), p.rule)
		return problem
	}
	if p.secret {
		problem.Message = fmt.Sprintf("%s: the value (not shown: it is a secret) is invalid, it must be %s; keeping the default", key, p.rule)
		return problem
	}
	// Each key is applied once and apply leaves the field alone on
	// failure, so show still gives the default here.
	problem.Message = fmt.Sprintf("%s: %s is invalid, it must be %s; keeping the default %s", key, clipQuoted(value), p.rule, clipQuoted(p.show(s)))
	return problem
}

// Reasons of the controller ConfigMap's Problems.
const (
	ReasonInvalidValue = "InvalidValue"
	// ReasonRefused is an error: a snippet, or a key whose absence leaves
	// traffic unprotected; Switchyard runs without it.
	ReasonRefused = "Refused"
	// ReasonNotSupported is a warning: one of ingress-nginx's keys that
	// Switchyard does not implement.
	ReasonNotSupported = "NotSupported"
	// ReasonUnknownKey is a warning: a key ingress-nginx does not have
	// either, most often a typo.
	ReasonUnknownKey = "UnknownKey"
)

// unparsedKey reports a key no parser knows, as the catalog of
// ingress-nginx's keys says.
func unparsedKey(key string) bus.Problem {
	field := "data." + key
	entry, ok := catalog.LookupKey(key)
	switch {
	case !ok:
		return bus.Problem{Field: field, Reason: ReasonUnknownKey,
			Message: fmt.Sprintf("%s is not a key of ingress-nginx or Switchyard (a typo?); it is ignored", clipQuoted(key))}
	case entry.Status == catalog.Refused:
		return bus.Problem{Field: field, Reason: ReasonRefused,
			Message: fmt.Sprintf("%s is refused by Switchyard and has no effect: %s", key, entry.Reason)}
	default:
		return bus.Problem{Field: field, Reason: ReasonNotSupported,
			Message: fmt.Sprintf("%s is not supported by Switchyard and is ignored: %s", key, entry.Reason)}
	}
}

// KeyStatus is one ConfigMap key as Switchyard treats it, for the
// generated reference (docs/configmap.md).
type KeyStatus struct {
	Key         string
	Implemented bool
	Status      string // "implemented", or the catalog's status
	Default     string // Switchyard's default when implemented, else ingress-nginx's
	Rule        string // what a valid value is, when implemented
	Note        string
}

// KeyStatuses lists ingress-nginx's ConfigMap keys and Switchyard's own,
// sorted by key. Whether a key is implemented comes from the parsers.
func KeyStatuses() []KeyStatus {
	defaults := bus.DefaultSettings()
	var out []KeyStatus
	seen := map[string]bool{}
	for _, k := range catalog.Keys() {
		seen[k.Name] = true
		if p, ok := settingParsers[k.Name]; ok {
			out = append(out, KeyStatus{Key: k.Name, Implemented: true, Status: "implemented", Default: p.show(&defaults), Rule: p.rule, Note: keyNotes[k.Name]})
			continue
		}
		out = append(out, KeyStatus{Key: k.Name, Status: string(k.Status), Default: k.Default, Note: k.Reason})
	}
	for key, p := range settingParsers {
		if !seen[key] {
			out = append(out, KeyStatus{Key: key, Implemented: true, Status: "implemented", Default: p.show(&defaults), Rule: p.rule,
				Note: "Switchyard's own key"})
		}
	}
	slices.SortFunc(out, func(a, b KeyStatus) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// keyNotes say what an implemented key does where its rule alone would
// not tell a reader of docs/configmap.md.
var keyNotes = map[string]string{
	"enable-access-log-for-default-backend": "when false, the requests the catch-all server's own default location answers (no Ingress rule matched) are not logged; requests of the hosts routed in Lua through the catch-all server are",
	"enable-auth-access-log":                "when true, the external auth subrequests (auth-url, global-auth-url) are logged too, in the http block's access log",
	"proxy-add-original-uri-header":         "when true, every proxied request carries X-Original-URI with the client's request URI",
	"access-log-params":                     "written on the http block's access_log and, without if=, on the stream block's (its variables are not the http block's); with skip-access-log-urls, a URI outside the list is logged when the if= variable is",
	"http-access-log-path":                  "the http block's log only; the stream block's follows stream-access-log-path and access-log-path",
	"disable-http-access-log":               "the http block's log only; disable-access-log turns off both",
	"service-upstream":                      "the default of the service-upstream annotation, which wins where an Ingress sets it: when true, requests go to the Service's cluster IP instead of its endpoints",
	"enable-syslog":                         "when true (and syslog-host is set), the http block's access log goes to syslog-host:syslog-port over UDP instead of its file (access-log-params' buffer, gzip and flush do not apply: NGINX does not buffer syslog logs), and its error log goes there too, besides the controller's log",
	"limit-conn-zone-variable":              "the key of every rate limit zone (limit-connections, limit-rps, limit-rpm), as in ingress-nginx; a changed variable declares new zones, so the states counted so far start again",
	"debug-connections":                     "NGINX logs the connections of these clients at debug level, whatever error-log-level says (debug_connection in the events block; Debian's NGINX is built with debugging), into NGINX's error log (the controller's log)",
	"proxy-ssl-location-only":               "either value is accepted and changes nothing: Switchyard always writes the proxy-ssl-* annotations in the locations of the Ingress that sets them only, which is what true does in ingress-nginx; with false (its default) ingress-nginx also copies the first such Ingress's into the server block, where locations of the host's other Ingresses inherit them, which Switchyard never does (docs/compatibility.md)",
	"disable-ipv6":                          "when true, NGINX listens on none of the IPv6 addresses of --http-addr and --https-addr (nor the TCP and UDP services on their IPv6 hosts), unless all of them are IPv6; when false, on every one, as in ingress-nginx (which listens on [::] besides 0.0.0.0 where the pod has IPv6)",
	"annotation-value-word-blocklist":       "an Ingress with an annotation under the prefix whose value holds one of the words (case-sensitive) is not served (AnnotationRefused, naming the word), as in ingress-nginx; Switchyard also checks every value against its annotation's whole-string pattern",
	"error-log-path":                        "NGINX writes its error log to this file as well as to the controller's log, which the applier reads (a reload NGINX refuses is reported from it); ingress-nginx writes only the file (its /var/log/nginx/error.log is a link to stderr)",
	"ssl-session-ticket-key":                "written to a file only the NGINX master reads (render shows it redacted, and no message repeats the value); with ssl-session-tickets on, every replica given the same key resumes the sessions another issued, where each NGINX's own keys work for that NGINX only",
	"disable-ipv6-dns":                      "when true, NGINX's resolver (ExternalName Services) asks for IPv4 addresses only and the IPv6 nameservers are left out, unless they are all there is; when false, both, as in ingress-nginx",
	"allow-cross-namespace-resources": "when true, " + strings.Join(append(slices.Clone(bus.SecretAnnotations), bus.ConfigMapAnnotations...), ", ") +
		` may name a Secret or ConfigMap of another namespace ("namespace/name"), which is then read; when false, such a value is refused: the Ingress is rejected (with auth-proxy-set-headers, its external auth answers 503) (docs/compatibility.md)`,
}

// settingParser validates one ConfigMap key and stores it in Settings.
type settingParser struct {
	rule  string                               // what a valid value is, for messages
	apply func(s *bus.Settings, v string) bool // false: v is invalid and s is untouched
	show  func(s *bus.Settings) string         // the field in ConfigMap spelling
	// failClosed: an invalid value marks the key unreadable
	// (bus.AccessSettings) instead of keeping the default, which would
	// leave open what the key closes.
	failClosed bool
	// secret: the value is a key, which no message may repeat.
	secret bool
}

// setting builds a settingParser from a field accessor, a parser and a
// formatter, so each table row below stays one line of intent.
func setting[T any](field func(*bus.Settings) *T, rule string, parse func(string) (T, bool), format func(T) string) settingParser {
	return settingParser{
		rule: rule,
		apply: func(s *bus.Settings, v string) bool {
			x, ok := parse(v)
			if ok {
				*field(s) = x
			}
			return ok
		},
		show: func(s *bus.Settings) string { return format(*field(s)) },
	}
}

// settingParsers is every ConfigMap key Switchyard understands, gathered
// from one table per concern (each in its own settings_<group>.go next to
// the bus.Settings part it fills). Values that reach nginx.conf unquoted
// (sizes, times, ciphers) are whole-string patterns whose classes hold no
// ';', '{', '}', quote, '$', '\' or whitespace, so no value can end a
// directive or start a new one.
var settingParsers = settingGroups(coreSettings, proxySettings, httpSettings, accessLogSettings, pathsSettings, proxyProtocolSettings, tlsSettings, nginxSettings, accessSettings, globalAuthSettings, redirectSettings, streamSettings, modSecuritySettings, tracingSettings)

// settingGroups merges the per-concern tables; a key in two of them is a
// programming error caught by every test run.
func settingGroups(groups ...map[string]settingParser) map[string]settingParser {
	all := map[string]settingParser{}
	for _, g := range groups {
		for key, p := range g {
			if _, dup := all[key]; dup {
				panic("ConfigMap key " + key + " is parsed by two setting groups")
			}
			all[key] = p
		}
	}
	return all
}

// coreSettings are the keys of the first releases: redirects, HSTS, the
// basic proxy timeouts, client address, keepalive, workers, logs and TLS.
var coreSettings = map[string]settingParser{
	"ssl-redirect":               boolSetting(func(s *bus.Settings) *bool { return &s.SSLRedirect }),
	"hsts":                       boolSetting(func(s *bus.Settings) *bool { return &s.HSTS }),
	"hsts-max-age":               intSetting(func(s *bus.Settings) *int { return &s.HSTSMaxAge }, 0, math.MaxInt32, "seconds"),
	"hsts-include-subdomains":    boolSetting(func(s *bus.Settings) *bool { return &s.HSTSIncludeSubdomains }),
	"hsts-preload":               boolSetting(func(s *bus.Settings) *bool { return &s.HSTSPreload }),
	"use-forwarded-headers":      boolSetting(func(s *bus.Settings) *bool { return &s.UseForwardedHeaders }),
	"compute-full-forwarded-for": boolSetting(func(s *bus.Settings) *bool { return &s.ComputeFullForwardedFor }),
	"proxy-real-ip-cidr": setting(func(s *bus.Settings) *[]string { return &s.ProxyRealIPCIDR },
		"a comma-separated list of at least one IPv4 or IPv6 CIDR such as 10.0.0.0/8", parseCIDRs, joinWith(",")),
	"server-tokens":                  boolSetting(func(s *bus.Settings) *bool { return &s.ServerTokens }),
	"use-http2":                      boolSetting(func(s *bus.Settings) *bool { return &s.UseHTTP2 }),
	"upstream-keepalive-connections": intSetting(func(s *bus.Settings) *int { return &s.UpstreamKeepaliveConnections }, 0, 100000, "connections, 0 disables keepalive"),
	"upstream-keepalive-timeout":     intSetting(func(s *bus.Settings) *int { return &s.UpstreamKeepaliveTimeout }, 0, 3600, "seconds"),
	"upstream-keepalive-requests":    intSetting(func(s *bus.Settings) *int { return &s.UpstreamKeepaliveRequests }, 1, 10000000, "requests"),
	"upstream-keepalive-time":        patternSetting(func(s *bus.Settings) *string { return &s.UpstreamKeepaliveTime }, timePattern, timeRule),
	"worker-processes": setting(func(s *bus.Settings) *string { return &s.WorkerProcesses },
		`"auto" or a whole number from 1 to 1024`, parseWorkerProcesses, identity),
	"worker-shutdown-timeout": patternSetting(func(s *bus.Settings) *string { return &s.WorkerShutdownTimeout }, timePattern, timeRule),
	"log-format-upstream": setting(func(s *bus.Settings) *string { return &s.LogFormatUpstream },
		logFormatRule, parseLogFormat, identity),
	"ssl-protocols": setting(func(s *bus.Settings) *[]string { return &s.SSLProtocols },
		"a space-separated list of at least one of "+strings.Join(sslProtocols, ", "), parseSSLProtocols, joinWith(" ")),
	"ssl-ciphers": setting(func(s *bus.Settings) *string { return &s.SSLCiphers },
		"an OpenSSL cipher list of 1 to 2048 characters from A-Z a-z 0-9 ! : + @ . _ -", parseCiphers, identity),
	"disable-proxy-intercept-errors": boolSetting(func(s *bus.Settings) *bool { return &s.DisableProxyInterceptErrors }),
	"custom-http-errors": setting(func(s *bus.Settings) *[]int { return &s.CustomHTTPErrors },
		"a comma-separated list of HTTP status codes from 400 to 599, or empty for none", parseHTTPErrors, joinInts),
	// NGINX's limit_req_status and limit_conn_status take 400 to 599.
	"limit-req-status-code":  intSetting(func(s *bus.Settings) *int { return &s.LimitReqStatusCode }, 400, 599, "an HTTP status"),
	"limit-conn-status-code": intSetting(func(s *bus.Settings) *int { return &s.LimitConnStatusCode }, 400, 599, "an HTTP status"),
	"limit-conn-zone-variable": patternSetting(func(s *bus.Settings) *string { return &s.LimitConnZoneVariable }, bus.LimitZoneVariablePattern,
		"one NGINX variable: $ and a name of letters, digits and _ (at most 64), such as $binary_remote_addr"),
	"allow-snippet-annotations":       boolSetting(func(s *bus.Settings) *bool { return &s.AllowSnippetAnnotations }),
	"allow-cross-namespace-resources": boolSetting(func(s *bus.Settings) *bool { return &s.AllowCrossNamespaceResources }),
	"annotations-risk-level": setting(func(s *bus.Settings) *string { return &s.AnnotationsRiskLevel },
		"one of "+strings.Join(riskLevels, ", "), parseRiskLevel, identity),
	"annotation-value-word-blocklist": setting(func(s *bus.Settings) *[]string { return &s.AnnotationValueWordBlocklist },
		"a comma-separated list of at most 256 words of 1 to 128 printable ASCII characters (no comma), or empty for none",
		parseWordBlocklist, joinWith(",")),
	// The global algorithm, as in ingress-nginx's ConfigMap: the hashing
	// and sticky balancers need per-backend settings, so only these two.
	"load-balance":     patternSetting(func(s *bus.Settings) *string { return &s.LoadBalance }, loadBalancePattern, "round_robin or ewma"),
	"service-upstream": boolSetting(func(s *bus.Settings) *bool { return &s.ServiceUpstream }),
	// Accepted for either value: see keyNotes.
	"proxy-ssl-location-only": boolSetting(func(s *bus.Settings) *bool { return &s.ProxySSLLocationOnly }),
}

var (
	// timePattern is an NGINX time such as "1h30m". Every number but the
	// last needs a unit: otherwise "1234567890" would pass as "123456789"
	// followed by "0" and overflow NGINX's parser.
	timePattern = regexp.MustCompile(`^([0-9]{1,9}(ms|s|m|h|d|w|M|y))*[0-9]{1,9}(ms|s|m|h|d|w|M|y)?$`)
	timeRule    = "an NGINX time such as 240s, 1h or 1h30m: numbers of 1 to 9 digits, each but the last with a unit of ms, s, m, h, d, w, M or y"
	// cipherPattern keeps the cipher list one unquoted NGINX word. Go's
	// regexp caps repeat counts at 1000, so parseCiphers checks the length.
	cipherPattern = regexp.MustCompile(`^[A-Za-z0-9!:+@._-]+$`)
	// logFormatPattern: log-format-upstream is written inside single quotes,
	// so ' and \ (NGINX's escape) must never appear and a line break would
	// split the directive. '$' is allowed only to start a variable: NGINX
	// refuses a lone '$' or an unclosed "${" and the reload would fail.
	logFormatRule    = "a non-empty NGINX log format of at most 4096 bytes without ', \\ or control characters, where every $ starts a variable ($name or ${name})"
	logFormatPattern = regexp.MustCompile(`^([^$'\\\x00-\x1f\x7f]|\$[A-Za-z_][A-Za-z0-9_]*|\$\{[A-Za-z_][A-Za-z0-9_]*\})+$`)

	loadBalancePattern = regexp.MustCompile(`^(?:round_robin|ewma)$`)

	sslProtocols = []string{"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"}
	riskLevels   = []string{"Low", "Medium", "High", "Critical"}
)

func boolSetting(field func(*bus.Settings) *bool) settingParser {
	return setting(field, "a boolean: true or false (also 1, 0, t, f, TRUE, False…)", parseBool, strconv.FormatBool)
}

func intSetting(field func(*bus.Settings) *int, lo, hi int, unit string) settingParser {
	return setting(field, fmt.Sprintf("a whole number from %d to %d (%s)", lo, hi, unit), parseIntIn(lo, hi), strconv.Itoa)
}

// secondsSetting reads a proxy timeout: whole seconds, a trailing "s" accepted.
func secondsSetting(field func(*bus.Settings) *int, lo int) settingParser {
	rule := fmt.Sprintf("a number of seconds from %d to %d", lo, features.MaxProxyTimeout)
	return setting(field, rule, func(v string) (int, bool) { return features.ParseSeconds(v, lo, features.MaxProxyTimeout) }, strconv.Itoa)
}

func patternSetting(field func(*bus.Settings) *string, re interface{ MatchString(string) bool }, rule string) settingParser {
	return setting(field, rule, func(v string) (string, bool) { return v, re.MatchString(v) }, identity)
}

// parseBool accepts what strconv.ParseBool does, which is what
// ingress-nginx's mapstructure decoding accepts.
func parseBool(v string) (bool, bool) {
	b, err := strconv.ParseBool(v)
	return b, err == nil
}

// parseIntIn accepts digits only: strconv.Atoi alone would also take a sign.
func parseIntIn(lo, hi int) func(string) (int, bool) {
	return func(v string) (int, bool) {
		if v == "" || strings.Trim(v, "0123456789") != "" {
			return 0, false
		}
		n, err := strconv.Atoi(v)
		return n, err == nil && n >= lo && n <= hi
	}
}

// parseWorkerProcesses stores numbers canonically ("04" becomes "4") since
// the value is written into nginx.conf as is.
func parseWorkerProcesses(v string) (string, bool) {
	if v == "auto" {
		return v, true
	}
	n, ok := parseIntIn(1, 1024)(v)
	return strconv.Itoa(n), ok
}

// parseCIDRs refuses the whole list if any item is bad: dropping one item
// silently would change which clients may set their own address.
func parseCIDRs(v string) ([]string, bool) {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		p, err := netip.ParsePrefix(strings.TrimSpace(item))
		if err != nil {
			return nil, false
		}
		out = append(out, p.String())
	}
	return out, true // Split gives at least one item, and "" does not parse
}

func parseSSLProtocols(v string) ([]string, bool) {
	var out []string
	for _, p := range strings.Fields(v) {
		if !slices.Contains(sslProtocols, p) {
			return nil, false
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, len(out) > 0
}

func parseHTTPErrors(v string) ([]int, bool) {
	codes := []int{}
	if v == "" {
		return codes, true
	}
	for item := range strings.SplitSeq(v, ",") {
		code, ok := parseIntIn(400, 599)(strings.TrimSpace(item))
		if !ok {
			return nil, false
		}
		codes = append(codes, code)
	}
	slices.Sort(codes)
	return slices.Compact(codes), true
}

// parseRiskLevel is case-insensitive, as ingress-nginx compares it, but
// stores the documented spelling.
func parseRiskLevel(v string) (string, bool) {
	i := slices.IndexFunc(riskLevels, func(l string) bool { return strings.EqualFold(l, v) })
	if i < 0 {
		return "", false
	}
	return riskLevels[i], true
}

func parseCiphers(v string) (string, bool) {
	return v, len(v) <= 2048 && cipherPattern.MatchString(v)
}

func parseLogFormat(v string) (string, bool) {
	return v, len(v) <= 4096 && utf8.ValidString(v) && logFormatPattern.MatchString(v)
}

func identity(v string) string { return v }

func joinWith(sep string) func([]string) string {
	return func(items []string) string { return strings.Join(items, sep) }
}

func joinInts(codes []int) string {
	items := make([]string, len(codes))
	for i, c := range codes {
		items[i] = strconv.Itoa(c)
	}
	return strings.Join(items, ",")
}

// clipQuoted shows an operator's value in a message: at most 64 bytes, cut
// on a rune boundary, and %q-quoted so a control character is escaped and
// never written raw into a log line or an Event.
func clipQuoted(v string) string {
	const limit = 64
	if len(v) <= limit {
		return fmt.Sprintf("%q", v)
	}
	cut := limit
	for cut > limit-utf8.UTFMax && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%q... (%d bytes)", v[:cut], len(v))
}

// blocklistWordPattern is one word of annotation-value-word-blocklist:
// printable ASCII without a comma (the separator), spaces inside allowed.
var blocklistWordPattern = regexp.MustCompile(`^[\x20-\x2b\x2d-\x7e]{1,128}$`)

// parseWordBlocklist reads annotation-value-word-blocklist. Empty items
// (a trailing comma) are skipped: a word "" would be in every value.
func parseWordBlocklist(v string) ([]string, bool) {
	return parseList(v, 256, blocklistWordPattern.MatchString)
}
