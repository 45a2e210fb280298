package modsecurity

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins/plugintest"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      map[string]string
		want    *features.ModSecurity
		errKey  string
		warnKey string
	}{
		{name: "nothing", in: map[string]string{}},
		{name: "on", in: map[string]string{KeyEnable: "true"}, want: &features.ModSecurity{Enabled: true}},
		{name: "off", in: map[string]string{KeyEnable: "false"}, want: &features.ModSecurity{}},
		{name: "on with the rules and an ID", in: map[string]string{KeyEnable: "True", KeyOWASPRules: "true", KeyTransactionID: "$request_id"},
			want: &features.ModSecurity{Enabled: true, OWASPRules: true, TransactionID: "$request_id"}},
		{name: "the rules alone follow the ConfigMap", in: map[string]string{KeyOWASPRules: "true"},
			want: &features.ModSecurity{Inherit: true, OWASPRules: true}, warnKey: KeyOWASPRules},
		{name: "an ID alone follows the ConfigMap", in: map[string]string{KeyTransactionID: "app-${request_id}"},
			want: &features.ModSecurity{Inherit: true, TransactionID: "app-${request_id}"}, warnKey: KeyTransactionID},
		{name: "literal and variables", in: map[string]string{KeyEnable: "1", KeyTransactionID: "${hostname}-$pid:$connection.${msec}"},
			want: &features.ModSecurity{Enabled: true, TransactionID: "${hostname}-$pid:$connection.${msec}"}},
		{name: "not a boolean rejects", in: map[string]string{KeyEnable: "yes"}, errKey: KeyEnable},
		{name: "an unknown variable rejects", in: map[string]string{KeyEnable: "true", KeyTransactionID: "$http_cookie"}, errKey: KeyTransactionID},
		{name: "a longer variable name rejects", in: map[string]string{KeyEnable: "true", KeyTransactionID: "$request_idx"}, errKey: KeyTransactionID},
		{name: "an injection rejects", in: map[string]string{KeyEnable: "true", KeyTransactionID: `x"; load_module /tmp/x.so; #`}, errKey: KeyTransactionID},
		{name: "a brace rejects", in: map[string]string{KeyEnable: "true", KeyTransactionID: "${request_id"}, errKey: KeyTransactionID},
		{name: "too long rejects", in: map[string]string{KeyEnable: "true", KeyTransactionID: strings.Repeat("a", 257)}, errKey: KeyTransactionID},
		{name: "engine On from the snippet", in: map[string]string{KeyEnable: "true", KeyOWASPRules: "true", KeySnippet: "On"},
			want: &features.ModSecurity{Enabled: true, OWASPRules: true, Engine: "On"}},
		{name: "engine alone follows the ConfigMap", in: map[string]string{KeySnippet: "DetectionOnly"},
			want: &features.ModSecurity{Inherit: true, Engine: "DetectionOnly"}, warnKey: KeySnippet},
		{name: "an engine that is no mode rejects", in: map[string]string{KeyEnable: "true", KeySnippet: "SecRuleEngine On"}, errKey: KeySnippet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Parse(tc.in)
			errKeys, warnKeys := plugintest.ErrorKeys(t, errs)
			errKey, warnKey := strings.Join(errKeys, ","), strings.Join(warnKeys, ",")
			if errKey != tc.errKey || warnKey != tc.warnKey {
				t.Fatalf("errors on %q, warnings on %q; want %q, %q (%v)", errKey, warnKey, tc.errKey, tc.warnKey, errs)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestTransactionIDPatternIsTheHosts: the pattern the host checks before
// the plugin sees a value is the one the feature validates with.
func TestTransactionIDPatternIsTheHosts(t *testing.T) {
	host := regexp.MustCompile(`^(?:` + Plugin{}.Describe().Annotations[2].Pattern + `)$`)
	for _, v := range []string{"$request_id", "${request_id}x", "$request_idx", `a"b`, "a b", "$host"} {
		if host.MatchString(v) != features.ModSecurityTransactionIDPattern.MatchString(v) {
			t.Errorf("%q: the host and the feature disagree", v)
		}
	}
}

// bracedVariable is a ${name} variable, the only place a brace may be.
var bracedVariable = regexp.MustCompile(`\$\{[a-z_]+\}`)

// FuzzParse: Parse never panics, what it returns always validates, and a
// transaction ID never holds what could end its quoted string.
func FuzzParse(f *testing.F) {
	f.Add("true", "true", "$request_id")
	f.Add("", "1", "${pid}-x")
	f.Add("false", "", `"; }`)
	f.Fuzz(func(t *testing.T, enable, owasp, id string) {
		in := map[string]string{KeyEnable: enable, KeyOWASPRules: owasp, KeyTransactionID: id, KeySnippet: owasp}
		got, _ := Parse(in)
		if err := (&features.Features{ModSecurity: got}).Validate(); err != nil {
			t.Fatalf("%v: returned %+v, which does not validate: %v", in, got, err)
		}
		if got != nil && strings.ContainsAny(bracedVariable.ReplaceAllString(got.TransactionID, ""), "\"'\\;{} \r\n\x00") {
			t.Fatalf("%v: transaction ID %q holds a character NGINX would read", in, got.TransactionID)
		}
	})
}
