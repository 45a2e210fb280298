package translator

import (
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

// valid is one accepted value and what it does to DefaultSettings.
type valid struct {
	in  string
	set func(*bus.Settings)
}

// keyCases is the test table row for one ConfigMap key.
type keyCases struct {
	def     string // ingress-nginx's default, spelled as in a ConfigMap
	valid   []valid
	invalid []string
}

// settingsCases covers every key settingParsers knows, gathered from one
// table per setting group (each group's test file adds its own);
// TestParseSettingsCoversEveryKey keeps the two in step.
var settingsCases = caseGroups(coreSettingsCases, proxySettingsCases, httpSettingsCases, accessLogSettingsCases, pathsSettingsCases, proxyProtocolSettingsCases, tlsSettingsCases, nginxSettingsCases, accessSettingsCases, globalAuthSettingsCases, redirectSettingsCases, streamSettingsCases, modSecuritySettingsCases, tracingSettingsCases)

func caseGroups(groups ...map[string]keyCases) map[string]keyCases {
	all := map[string]keyCases{}
	for _, g := range groups {
		maps.Copy(all, g)
	}
	return all
}

var coreSettingsCases = map[string]keyCases{
	"ssl-redirect":                    boolCases(true, func(s *bus.Settings) *bool { return &s.SSLRedirect }),
	"hsts":                            boolCases(true, func(s *bus.Settings) *bool { return &s.HSTS }),
	"hsts-include-subdomains":         boolCases(true, func(s *bus.Settings) *bool { return &s.HSTSIncludeSubdomains }),
	"hsts-preload":                    boolCases(false, func(s *bus.Settings) *bool { return &s.HSTSPreload }),
	"use-forwarded-headers":           boolCases(false, func(s *bus.Settings) *bool { return &s.UseForwardedHeaders }),
	"compute-full-forwarded-for":      boolCases(false, func(s *bus.Settings) *bool { return &s.ComputeFullForwardedFor }),
	"server-tokens":                   boolCases(false, func(s *bus.Settings) *bool { return &s.ServerTokens }),
	"use-http2":                       boolCases(true, func(s *bus.Settings) *bool { return &s.UseHTTP2 }),
	"allow-snippet-annotations":       boolCases(false, func(s *bus.Settings) *bool { return &s.AllowSnippetAnnotations }),
	"allow-cross-namespace-resources": boolCases(false, func(s *bus.Settings) *bool { return &s.AllowCrossNamespaceResources }),

	"hsts-max-age": intCases("31536000", func(s *bus.Settings) *int { return &s.HSTSMaxAge },
		[]int{0, 600, 63072000, 2147483647}, []string{"-1", "2147483648", "99999999999999999999"}),
	"upstream-keepalive-connections": intCases("320", func(s *bus.Settings) *int { return &s.UpstreamKeepaliveConnections },
		[]int{0, 1000, 100000}, []string{"100001", "-5"}),
	"upstream-keepalive-timeout": intCases("60", func(s *bus.Settings) *int { return &s.UpstreamKeepaliveTimeout },
		[]int{0, 30, 3600}, []string{"3601", "60s"}),
	"limit-req-status-code": intCases("503", func(s *bus.Settings) *int { return &s.LimitReqStatusCode },
		[]int{400, 429, 599}, []string{"399", "600", "0", "429;", "-429"}),
	"limit-conn-status-code": intCases("503", func(s *bus.Settings) *int { return &s.LimitConnStatusCode },
		[]int{400, 429, 599}, []string{"200", "1000", "5xx"}),
	"upstream-keepalive-requests": intCases("10000", func(s *bus.Settings) *int { return &s.UpstreamKeepaliveRequests },
		[]int{1, 100, 10000000}, []string{"0", "10000001"}),

	"upstream-keepalive-time": stringCases("1h", func(s *bus.Settings) *string { return &s.UpstreamKeepaliveTime },
		[]string{"30s", "1h30m", "500ms", "5", "1d", "2w", "1M", "1y", "1h30"},
		[]string{"1x", "h", "1 h", "1H", "-1s", "1.5h", "1234567890", "1s1234567890", "1h;"}),
	"worker-shutdown-timeout": stringCases("240s", func(s *bus.Settings) *string { return &s.WorkerShutdownTimeout },
		[]string{"10m", "0", "300s", "1h5m10s"},
		[]string{"forever", "240 s", "240s;", "${t}"}),
	"ssl-ciphers": stringCases(bus.DefaultSettings().SSLCiphers, func(s *bus.Settings) *string { return &s.SSLCiphers },
		[]string{"HIGH:!aNULL:!MD5", "ECDHE-RSA-AES128-GCM-SHA256", "DEFAULT:+SHA1:@STRENGTH", "TLS_AES_128_GCM_SHA256.x"},
		[]string{"HIGH !aNULL", "HIGH,MEDIUM", "a'b", "$x", "@SECLEVEL=0", strings.Repeat("A", 2049)}),
	"limit-conn-zone-variable": stringCases("$binary_remote_addr", func(s *bus.Settings) *string { return &s.LimitConnZoneVariable },
		[]string{"$binary_remote_addr", "$http_x_client_id", "$remote_addr", "$_x1"},
		[]string{"binary_remote_addr", "$", "$1a", "$a-b", "$a$b", "${a}", "$a;", "$a b", "$host;limit_req off", "$" + strings.Repeat("a", 65)}),
	"proxy-ssl-location-only": boolCases(false, func(s *bus.Settings) *bool { return &s.ProxySSLLocationOnly }),
	"service-upstream":        boolCases(false, func(s *bus.Settings) *bool { return &s.ServiceUpstream }),
	"load-balance": stringCases("round_robin", func(s *bus.Settings) *string { return &s.LoadBalance },
		[]string{"ewma", "round_robin"},
		[]string{"EWMA", "chash", "sticky_balanced", "ewma;", "round robin", "least_conn"}),
	"annotation-value-word-blocklist": keyCases{def: "",
		valid: []valid{
			{"", setEmpty(wordBlocklistField)},
			{"load_module,lua_package,_by_lua,location,root,proxy_pass,serviceaccount,{,},',\"", setStrings(wordBlocklistField,
				"load_module", "lua_package", "_by_lua", "location", "root", "proxy_pass", "serviceaccount", "{", "}", "'", `"`)},
			{"a b, c,,", setStrings(wordBlocklistField, "a b", "c")},
		},
		invalid: []string{"é", "a\tb", strings.Repeat("w", 129), manyWords(257)},
	},
	"annotations-risk-level": keyCases{def: "High",
		valid: []valid{
			{"Low", setString(riskLevelField, "Low")}, {"Medium", setString(riskLevelField, "Medium")},
			{"Critical", setString(riskLevelField, "Critical")}, {"medium", setString(riskLevelField, "Medium")},
			{"CRITICAL", setString(riskLevelField, "Critical")}, {" low ", setString(riskLevelField, "Low")},
		},
		invalid: []string{"", "Lowest", "none", "High;", "Hi gh"},
	},
	"worker-processes": keyCases{def: "auto",
		valid: []valid{
			{"auto", setString(workerProcessesField, "auto")}, {"1", setString(workerProcessesField, "1")},
			{"1024", setString(workerProcessesField, "1024")}, {"08", setString(workerProcessesField, "8")},
		},
		invalid: []string{"", "0", "1025", "AUTO", "auto;", "-1", "4 4"},
	},
	"proxy-real-ip-cidr": keyCases{def: "0.0.0.0/0",
		valid: []valid{
			{"10.0.0.0/8", setStrings(realIPField, "10.0.0.0/8")},
			{"10.0.0.0/8, 192.168.0.0/16 ,2001:DB8::/32", setStrings(realIPField, "10.0.0.0/8", "192.168.0.0/16", "2001:db8::/32")},
			{"::/0", setStrings(realIPField, "::/0")},
		},
		invalid: []string{"", "10.0.0.1", "10.0.0.0/33", "10.0.0.0/8,", "10.0.0.0/8,,192.168.0.0/16",
			"10.0.0.0/8;", "fe80::1%eth0/64", "10.0.0.0/8 192.168.0.0/16", "example.com/8"},
	},
	"ssl-protocols": keyCases{def: "TLSv1.2 TLSv1.3",
		valid: []valid{
			{"TLSv1.3", setStrings(sslProtocolsField, "TLSv1.3")},
			{"TLSv1.2  TLSv1.3 TLSv1.2", setStrings(sslProtocolsField, "TLSv1.2", "TLSv1.3")},
			{"TLSv1.3 TLSv1 TLSv1.1", setStrings(sslProtocolsField, "TLSv1.3", "TLSv1", "TLSv1.1")},
		},
		invalid: []string{"", "SSLv3", "TLSv1.2 SSLv3", "tlsv1.2", "TLSv1.2,TLSv1.3", "TLSv1.4", "TLSv1.2;"},
	},
	"disable-proxy-intercept-errors": boolCases(false, func(s *bus.Settings) *bool { return &s.DisableProxyInterceptErrors }),
	"custom-http-errors": keyCases{def: "",
		valid: []valid{
			{"", setInts()}, {"404,503", setInts(404, 503)}, {"503, 404,404 ,500", setInts(404, 500, 503)},
			{"400,599", setInts(400, 599)},
		},
		invalid: []string{"399", "600", "302", "404,abc", "404,", "+404", "404;", "404 503"},
	},
	"log-format-upstream": keyCases{def: bus.DefaultLogFormatUpstream,
		valid: []valid{
			{`$remote_addr - "$request" $status`, setString(logFormatField, `$remote_addr - "$request" $status`)},
			{`${remote_addr}x [$time_local] {$status}`, setString(logFormatField, `${remote_addr}x [$time_local] {$status}`)},
			{`{"time": "$time_iso8601", "ip": "$remote_addr"}`, setString(logFormatField, `{"time": "$time_iso8601", "ip": "$remote_addr"}`)},
			{"  plain; text #1  ", setString(logFormatField, "plain; text #1")},
			{"é $x", setString(logFormatField, "é $x")},
		},
		invalid: []string{`$`, `a $ b`, `${`, `${remote_addr`, `${}`, `${1a}`, `$1`, `$-x`, `a'b`, `a\b`,
			"a\nb", "a\rb", "a\tb", "a\x00b", "a\x7fb", "a\x1bb", "\xff", strings.Repeat("a", 4097)},
	},
}

func boolCases(def bool, field func(*bus.Settings) *bool) keyCases {
	c := keyCases{def: strconv.FormatBool(def),
		invalid: []string{"", "yes", "no", "on", "off", "2", "truee", "tRUE", "true;"}}
	for _, in := range []string{"true", "false", "1", "0", "t", "f", "T", "F", "TRUE", "FALSE", "True", "False", " true\n"} {
		want, _ := strconv.ParseBool(strings.TrimSpace(in))
		c.valid = append(c.valid, valid{in, func(s *bus.Settings) { *field(s) = want }})
	}
	return c
}

// intCases adds the refusals every integer key shares to the given ones.
func intCases(def string, field func(*bus.Settings) *int, good []int, bad []string) keyCases {
	c := keyCases{def: def, invalid: append([]string{"", "abc", "+5", "0x10", "1e3", "1_000", "1 000", "１２"}, bad...)}
	for _, n := range good {
		c.valid = append(c.valid, valid{strconv.Itoa(n), func(s *bus.Settings) { *field(s) = n }})
	}
	c.valid = append(c.valid, valid{" 0" + strconv.Itoa(good[1]) + " ", func(s *bus.Settings) { *field(s) = good[1] }})
	return c
}

// secondsCases are intCases for a timeout, which also takes a trailing "s".
func secondsCases(def string, field func(*bus.Settings) *int, good []int, bad []string) keyCases {
	c := intCases(def, field, good, append([]string{"s", "5m", "5ss", "5 s"}, bad...))
	for _, n := range good {
		c.valid = append(c.valid, valid{strconv.Itoa(n) + "s", func(s *bus.Settings) { *field(s) = n }})
	}
	return c
}

func stringCases(def string, field func(*bus.Settings) *string, good, bad []string) keyCases {
	c := keyCases{def: def, invalid: append([]string{""}, bad...)}
	for _, v := range good {
		c.valid = append(c.valid, valid{v, setString(field, v)})
	}
	return c
}

func riskLevelField(s *bus.Settings) *string       { return &s.AnnotationsRiskLevel }
func wordBlocklistField(s *bus.Settings) *[]string { return &s.AnnotationValueWordBlocklist }
func workerProcessesField(s *bus.Settings) *string { return &s.WorkerProcesses }
func logFormatField(s *bus.Settings) *string       { return &s.LogFormatUpstream }
func realIPField(s *bus.Settings) *[]string        { return &s.ProxyRealIPCIDR }
func sslProtocolsField(s *bus.Settings) *[]string  { return &s.SSLProtocols }

func setString(field func(*bus.Settings) *string, v string) func(*bus.Settings) {
	return func(s *bus.Settings) { *field(s) = v }
}

func setStrings(field func(*bus.Settings) *[]string, v ...string) func(*bus.Settings) {
	return func(s *bus.Settings) { *field(s) = v }
}

func setInts(codes ...int) func(*bus.Settings) {
	return func(s *bus.Settings) { s.CustomHTTPErrors = append([]int{}, codes...) }
}

func TestParseSettingsCoversEveryKey(t *testing.T) {
	parsers := slices.Sorted(maps.Keys(settingParsers))
	cases := slices.Sorted(maps.Keys(settingsCases))
	if !slices.Equal(parsers, cases) {
		t.Fatalf("keys parsed:\n%v\nkeys tested:\n%v", parsers, cases)
	}
	for key, c := range settingsCases {
		if len(c.valid) == 0 || len(c.invalid) == 0 {
			t.Errorf("%s: needs at least one valid and one invalid value", key)
		}
	}
}

func TestParseSettingsEmpty(t *testing.T) {
	for name, data := range map[string]map[string]string{"nil": nil, "empty": {}} {
		got, problems := parseSettings(data)
		if !reflect.DeepEqual(got, bus.DefaultSettings()) || len(problems) != 0 {
			t.Errorf("%s: got %+v, %v; want the defaults and no problems", name, got, problems)
		}
	}
}

// TestParseSettingsDefaults checks, key by key, that an absent key leaves
// ingress-nginx's default, and that writing that default out changes nothing.
func TestParseSettingsDefaults(t *testing.T) {
	absent, _ := parseSettings(nil)
	for key, c := range settingsCases {
		if got := settingParsers[key].show(&absent); got != c.def {
			t.Errorf("%s absent: got %q, want %q", key, got, c.def)
		}
		got, problems := parseSettings(map[string]string{key: c.def})
		if !reflect.DeepEqual(got, bus.DefaultSettings()) || len(problems) != 0 {
			t.Errorf("%s: %q: got %+v, %v; want the defaults and no problems", key, c.def, got, problems)
		}
	}
}

func TestParseSettingsValid(t *testing.T) {
	for key, c := range settingsCases {
		for _, v := range c.valid {
			want := bus.DefaultSettings()
			v.set(&want)
			got, problems := parseSettings(map[string]string{key: v.in})
			if key == "allow-snippet-annotations" && got.AllowSnippetAnnotations {
				problems = nil // TestSnippetsAllowedIsReported
			}
			if key == "enable-opentelemetry" && got.EnableOpentelemetry {
				problems = nil // TestCheckTracing
			}
			if key == "enable-syslog" && got.Syslog.Enable {
				problems = nil // TestCheckSyslog
			}
			if len(problems) != 0 {
				t.Errorf("%s: %q: unexpected problems %v", key, v.in, problems)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %q:\n got %+v\nwant %+v", key, v.in, got, want)
			}
		}
	}
}

func TestParseSettingsInvalid(t *testing.T) {
	for key, c := range settingsCases {
		for _, in := range c.invalid {
			got, problems := parseSettings(map[string]string{key: in})
			want := bus.DefaultSettings()
			if settingParsers[key].failClosed {
				want.MarkUnreadable(key) // TestAccessKeysFailClosed
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %q: the default was not kept: %+v", key, in, got)
			}
			if len(problems) != 1 {
				t.Errorf("%s: %q: want one problem, got %v", key, in, problems)
				continue
			}
			checkInvalidProblem(t, key, in, c.def, problems[0])
		}
	}
}

func checkInvalidProblem(t *testing.T, key, in, def string, p bus.Problem) {
	t.Helper()
	if p.Field != "data."+key || p.Reason != "InvalidValue" {
		t.Errorf("%s: %q: got %s/%s, want data.%s/InvalidValue", key, in, p.Field, p.Reason, key)
	}
	kept := "keeping the default " + clipQuoted(def)
	if settingParsers[key].failClosed {
		kept = "every location it applies to answers 403"
	}
	shown := clipQuoted(strings.TrimSpace(in))
	if settingParsers[key].secret {
		// A key's value never reaches a message, not even clipped.
		if len(in) > 4 && strings.Contains(p.Message, strings.TrimSpace(in)[:5]) {
			t.Errorf("%s: the message repeats the secret value: %q", key, p.Message)
		}
		shown, kept = "not shown", "keeping the default"
	}
	for _, part := range []string{key + ": ", shown, "must be", kept} {
		if !strings.Contains(p.Message, part) {
			t.Errorf("%s: %q: message %q lacks %q", key, in, p.Message, part)
		}
	}
	if hasControl(p.Message) {
		t.Errorf("%s: %q: message holds a raw control character: %q", key, in, p.Message)
	}
}

func hasControl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

func TestParseSettingsUnknownKey(t *testing.T) {
	got, problems := parseSettings(map[string]string{"ssl-redirekt": "false", "hsts": "false"})
	want := bus.DefaultSettings()
	want.HSTS = false
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if len(problems) != 1 || problems[0].Field != "data.ssl-redirekt" || problems[0].Reason != "UnknownKey" ||
		!strings.Contains(problems[0].Message, `"ssl-redirekt"`) {
		t.Errorf("want one UnknownKey problem for data.ssl-redirekt, got %v", problems)
	}
}

// TestParseSettingsUnparsedKeys: a key no parser knows never passes in
// silence. Snippets (and keys whose absence would leave traffic open) are
// refused, ingress-nginx's other keys are not supported, anything else is
// unknown; the settings stay the defaults.
func TestParseSettingsUnparsedKeys(t *testing.T) {
	cases := []struct{ key, reason, msg string }{
		{"http-snippet", ReasonRefused, "a snippet"},
		{"server-snippet", ReasonRefused, "a snippet"},
		{"location-snippet", ReasonRefused, "a snippet"},
		{"main-snippet", ReasonRefused, "a snippet"},
		{"stream-snippet", ReasonRefused, "a snippet"},
		{"modsecurity-snippet", ReasonRefused, "a snippet"},
		{"enable-opentracing", ReasonNotSupported, "removed from ingress-nginx"},
		{"datadog-collector-host", ReasonNotSupported, "is not supported by Switchyard and is ignored"},
		{"ssl-redirekt", ReasonUnknownKey, "not a key of ingress-nginx or Switchyard"},
	}
	for _, c := range cases {
		got, problems := parseSettings(map[string]string{c.key: "x"})
		if !reflect.DeepEqual(got, bus.DefaultSettings()) {
			t.Errorf("%s changed the settings: %+v", c.key, got)
		}
		if len(problems) != 1 || problems[0].Field != "data."+c.key || problems[0].Reason != c.reason ||
			!strings.Contains(problems[0].Message, c.msg) {
			t.Errorf("%s: got %+v, want one %s problem saying %q", c.key, problems, c.reason, c.msg)
		}
	}
}

// TestKeyStatuses: every key a parser knows is listed as implemented with
// its default, and ingress-nginx's keys are all listed.
func TestKeyStatuses(t *testing.T) {
	statuses := KeyStatuses()
	listed := map[string]KeyStatus{}
	for _, k := range statuses {
		listed[k.Key] = k
	}
	for key := range settingParsers {
		if k := listed[key]; !k.Implemented || k.Status != "implemented" {
			t.Errorf("%s: %+v, want implemented", key, k)
		}
	}
	if k := listed["http-snippet"]; k.Status != "refused" {
		t.Errorf("http-snippet: %+v", k)
	}
	if len(statuses) < 200 {
		t.Errorf("%d keys listed, want ingress-nginx's keys (over 200 with the removed ones)", len(statuses))
	}
}

func TestParseSettingsSeveralBadKeys(t *testing.T) {
	data := map[string]string{
		"use-http2":           "maybe",
		"proxy-body-size":     "1 gigabyte",
		"hsts":                "false", // valid, still applied
		"annotations-risk":    "Critical",
		"custom-http-errors":  "404,200",
		"ssl-protocols":       "SSLv3",
		"log-format-upstream": "'",
		"worker-processes":    "all",
	}
	want := bus.DefaultSettings()
	want.HSTS = false
	for range 5 { // map order is random: the report must not be
		got, problems := parseSettings(data)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %+v\nwant %+v", got, want)
		}
		var fields []string
		for _, p := range problems {
			fields = append(fields, p.Field+" "+p.Reason)
		}
		wantFields := []string{
			"data.annotations-risk UnknownKey", "data.custom-http-errors InvalidValue",
			"data.log-format-upstream InvalidValue", "data.proxy-body-size InvalidValue",
			"data.ssl-protocols InvalidValue", "data.use-http2 InvalidValue", "data.worker-processes InvalidValue",
		}
		if !slices.Equal(fields, wantFields) {
			t.Fatalf("got\n%v\nwant\n%v", fields, wantFields)
		}
	}
}

// TestParseSettingsInjection: values that would end the quoted log format
// or the cipher directive and add directives of their own are refused.
func TestParseSettingsInjection(t *testing.T) {
	attempts := []struct{ key, value string }{
		{"log-format-upstream", `'; error_log /etc/passwd; #`},
		{"log-format-upstream", `$remote_addr'; error_log /etc/passwd; #`},
		{"log-format-upstream", "\"\n\""},
		{"log-format-upstream", "$status\n}\nserver { listen 81; }"},
		{"log-format-upstream", `$`},
		{"log-format-upstream", `${`},
		{"log-format-upstream", `\`},
		{"log-format-upstream", `\'; include /etc/passwd; #`},
		{"log-format-stream", `$remote_addr'; error_log /etc/passwd; #`},
		{"log-format-stream", "$status\n}\nserver { listen 81; }"},
		{"ssl-ciphers", `x; include /etc/passwd`},
		{"ssl-ciphers", "HIGH;\ninclude /etc/passwd;"},
		{"proxy-body-size", "1m; include /etc/passwd"},
		{"upstream-keepalive-time", "1h; include /etc/passwd"},
		{"worker-shutdown-timeout", "240s;}"},
		{"worker-processes", "auto; load_module x.so"},
		{"ssl-protocols", "TLSv1.2; include /etc/passwd;"},
		{"proxy-real-ip-cidr", "10.0.0.0/8; include /etc/passwd"},
		{"annotations-risk-level", "Critical\n"},
	}
	for _, a := range attempts {
		got, problems := parseSettings(map[string]string{a.key: a.value})
		if a.key == "annotations-risk-level" { // trimming makes this one valid
			if got.AnnotationsRiskLevel != "Critical" || len(problems) != 0 {
				t.Errorf("%q: got %q, %v", a.value, got.AnnotationsRiskLevel, problems)
			}
			continue
		}
		if !reflect.DeepEqual(got, bus.DefaultSettings()) || len(problems) != 1 || problems[0].Reason != "InvalidValue" {
			t.Errorf("%s: %q was not refused: %+v, %v", a.key, a.value, got, problems)
		}
	}
}

func TestParseSettingsMessageClipped(t *testing.T) {
	long := "\x1b[31m" + strings.Repeat("é", 100) + "\n"
	_, problems := parseSettings(map[string]string{"ssl-ciphers": long, strings.Repeat("k\n", 100): "v"})
	if len(problems) != 2 {
		t.Fatalf("want two problems, got %v", problems)
	}
	for _, p := range problems {
		if hasControl(p.Message) || !strings.Contains(p.Message, "bytes)") {
			t.Errorf("message not clipped and escaped: %q", p.Message)
		}
		if len(p.Message) > 600 {
			t.Errorf("message of %d bytes", len(p.Message))
		}
	}
	if got := clipQuoted(strings.Repeat("a", 63) + "é"); got != `"`+strings.Repeat("a", 63)+`"... (65 bytes)` {
		t.Errorf("clipQuoted cut inside a rune: %s", got)
	}
}

// TestSnippetsAllowedIsReported: allow-snippet-annotations true is read but
// cannot do what it asks; that is said, not left for the user to find.
func TestSnippetsAllowedIsReported(t *testing.T) {
	_, problems := parseSettings(map[string]string{"allow-snippet-annotations": "true", "zz-typo": "1", "aa-typo": "1"})
	fields := make([]string, 0, len(problems))
	for _, p := range problems {
		fields = append(fields, p.Field+" "+p.Reason)
	}
	want := []string{"data.aa-typo UnknownKey", "data.allow-snippet-annotations Refused", "data.zz-typo UnknownKey"}
	if !reflect.DeepEqual(fields, want) {
		t.Errorf("problems %v, want %v", fields, want)
	}
	if _, problems := parseSettings(map[string]string{"allow-snippet-annotations": "false"}); len(problems) != 0 {
		t.Errorf("allow-snippet-annotations false: %v", problems)
	}
}

// TestModSecuritySnippetSetting: the ConfigMap's modsecurity-snippet that
// is exactly one SecRuleEngine line is the servers' engine mode, with no
// problem; any other stays refused as a snippet and sets nothing.
func TestModSecuritySnippetSetting(t *testing.T) {
	for value, want := range map[string]string{
		"SecRuleEngine On\n":                        "On",
		"  secruleengine detectiononly ":            "DetectionOnly",
		"SecRuleEngine Off":                         "Off",
		"SecRuleEngine On\nSecRequestBodyAccess On": "",
		"Include /etc/passwd":                       "",
	} {
		got, problems := parseSettings(map[string]string{"enable-modsecurity": "true", "modsecurity-snippet": value})
		if got.ModSecurityEngine != want {
			t.Errorf("%q: engine %q, want %q", value, got.ModSecurityEngine, want)
		}
		refused := len(problems) == 1 && problems[0].Reason == ReasonRefused && problems[0].Field == "data.modsecurity-snippet"
		if (want == "") != refused || (want != "" && len(problems) != 0) {
			t.Errorf("%q: problems %+v", value, problems)
		}
	}
}

// manyWords is a list of n distinct words.
func manyWords(n int) string {
	words := make([]string, n)
	for i := range words {
		words[i] = "w" + strconv.Itoa(i)
	}
	return strings.Join(words, ",")
}
