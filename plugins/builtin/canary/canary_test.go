package canary

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/plugintest"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ann      map[string]string
		want     *bus.Canary
		errKeys  []string // rejecting errors, by key
		warnKeys []string
	}{
		{name: "not a canary", ann: map[string]string{}, want: nil},
		{name: "canary false", ann: map[string]string{KeyCanary: "false"}, want: nil},
		{name: "defaults", ann: map[string]string{KeyCanary: "true"}, want: &bus.Canary{WeightTotal: 100}},
		{name: "ParseBool spellings", ann: map[string]string{KeyCanary: "True", KeyWeight: "5"}, want: &bus.Canary{Weight: 5, WeightTotal: 100}},
		{name: "everything", ann: map[string]string{KeyCanary: "true", KeyWeight: "3", KeyWeightTotal: "10",
			KeyHeader: "X-Canary", KeyHeaderValue: "v2", KeyCookie: "canary"},
			want: &bus.Canary{Weight: 3, WeightTotal: 10, Header: "X-Canary", HeaderValue: "v2", Cookie: "canary"}},
		{name: "pattern", ann: map[string]string{KeyCanary: "1", KeyHeader: "X-Canary", KeyHeaderPattern: `^v\d+$`},
			want: &bus.Canary{WeightTotal: 100, Header: "X-Canary", HeaderPattern: `^v\d+$`}},
		{name: "value beats pattern", ann: map[string]string{KeyCanary: "1", KeyHeader: "H", KeyHeaderValue: "a", KeyHeaderPattern: "b"},
			want: &bus.Canary{WeightTotal: 100, Header: "H", HeaderValue: "a"}, warnKeys: []string{KeyHeaderPattern}},
		{name: "bad pattern", ann: map[string]string{KeyCanary: "true", KeyHeader: "H", KeyHeaderPattern: "(a"},
			errKeys: []string{KeyHeaderPattern}},
		{name: "pattern with back-reference", ann: map[string]string{KeyCanary: "true", KeyHeader: "H", KeyHeaderPattern: `(a)\1`},
			errKeys: []string{KeyHeaderPattern}},
		{name: "weight over total is clamped", ann: map[string]string{KeyCanary: "true", KeyWeight: "150"},
			want: &bus.Canary{Weight: 100, WeightTotal: 100}, warnKeys: []string{KeyWeight}},
		{name: "weight total zero", ann: map[string]string{KeyCanary: "true", KeyWeightTotal: "0"}, errKeys: []string{KeyWeightTotal}},
		{name: "weight total too big", ann: map[string]string{KeyCanary: "true", KeyWeightTotal: "9999999"}, errKeys: []string{KeyWeightTotal}},
		{name: "value without header", ann: map[string]string{KeyCanary: "true", KeyHeaderValue: "v"},
			want: &bus.Canary{WeightTotal: 100}, warnKeys: []string{KeyHeaderValue}},
		{name: "configured but not enabled", ann: map[string]string{KeyWeight: "10", KeyCookie: "c"},
			want: nil, warnKeys: []string{KeyCookie, KeyWeight}},
		{name: "canary not a bool", ann: map[string]string{KeyCanary: "yes"}, errKeys: []string{KeyCanary}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Parse(tc.ann)
			errKeys, warnKeys := plugintest.ErrorKeys(t, errs)
			if !reflect.DeepEqual(errKeys, tc.errKeys) || !reflect.DeepEqual(warnKeys, tc.warnKeys) {
				t.Fatalf("errors %v warnings %v, want %v %v (%+v)", errKeys, warnKeys, tc.errKeys, tc.warnKeys, errs)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got != nil {
				if err := (&bus.Features{Canary: got}).Validate(); err != nil {
					t.Fatalf("the host would refuse the policy: %v", err)
				}
			}
		})
	}
}

// TestPatterns checks the patterns the host applies before Parse: what
// could reach nginx.conf or a Lua variable name is refused there.
func TestPatterns(t *testing.T) {
	patterns := map[string]*regexp.Regexp{}
	for _, a := range (Plugin{}).Describe().Annotations {
		patterns[a.Key] = regexp.MustCompile(`^(?:` + a.Pattern + `)$`)
	}
	for _, tc := range []struct {
		key, value string
		ok         bool
	}{
		{KeyCanary, "true", true}, {KeyCanary, "yes", false},
		{KeyHeader, "X-Canary_1", true}, {KeyHeader, "X Canary", false}, {KeyHeader, "a$b", false}, {KeyHeader, "", false},
		{KeyHeaderValue, "v2 beta", true}, {KeyHeaderValue, `a"b`, false}, {KeyHeaderValue, "a$b", false}, {KeyHeaderValue, "a{b", false},
		{KeyHeaderPattern, `^v[0-9]{1,3}$`, true}, {KeyHeaderPattern, `a"b`, false}, {KeyHeaderPattern, "a'b", false},
		{KeyCookie, "canary.v2", true}, {KeyCookie, "a;b", false}, {KeyCookie, "a=b", false},
		{KeyWeight, "50", true}, {KeyWeight, "-1", false}, {KeyWeight, "1.5", false}, {KeyWeight, "12345678", false},
		{KeyWeightTotal, "1000", true}, {KeyWeightTotal, "", false},
	} {
		if got := patterns[tc.key].MatchString(tc.value); got != tc.ok {
			t.Errorf("%s=%q: match %v, want %v", tc.key, tc.value, got, tc.ok)
		}
	}
}

func TestApply(t *testing.T) {
	res := plugintest.Apply(t, New(), []plugins.Ingress{
		{Namespace: "a", Name: "canary", Annotations: map[string]string{KeyCanary: "true", KeyWeight: "7"}},
		{Namespace: "a", Name: "bad", Annotations: map[string]string{KeyCanary: "true", KeyWeightTotal: "0"}},
	})
	if len(res) != 2 || res[0].Features.Canary == nil || res[0].Features.Canary.Weight != 7 || len(res[0].Errors) != 0 {
		t.Fatalf("canary: %+v", res[0])
	}
	if res[1].Features.Canary != nil || len(res[1].Errors) != 1 || res[1].Errors[0].Warning {
		t.Fatalf("bad: %+v", res[1])
	}
}

// FuzzParse feeds Parse what the host's patterns let through and checks
// that every policy it returns passes the host's and renderer's check.
func FuzzParse(f *testing.F) {
	f.Add("true", "X-Canary", "v2", `^v\d+$`, "canary", "50", "100")
	f.Add("1", "", "", "(a", "", "150", "0")
	f.Add("false", "h", "", "", "c", "9999999", "1")
	patterns := map[string]*regexp.Regexp{}
	for _, a := range (Plugin{}).Describe().Annotations {
		patterns[a.Key] = regexp.MustCompile(`^(?:` + a.Pattern + `)$`)
	}
	f.Fuzz(func(t *testing.T, canary, header, value, pattern, cookie, weight, total string) {
		ann := map[string]string{}
		for k, v := range map[string]string{KeyCanary: canary, KeyHeader: header, KeyHeaderValue: value,
			KeyHeaderPattern: pattern, KeyCookie: cookie, KeyWeight: weight, KeyWeightTotal: total} {
			if v != "" && patterns[k].MatchString(v) && !strings.ContainsAny(v, "\r\n\x00") {
				ann[k] = v
			}
		}
		got, errs := Parse(ann)
		rejected := false
		for _, e := range errs {
			if e.Key == "" || e.Message == "" {
				t.Fatalf("error without key or message: %+v", e)
			}
			rejected = rejected || !e.Warning
		}
		if rejected && got != nil {
			t.Fatalf("rejected but returned %+v", got)
		}
		if got != nil {
			if err := (&bus.Features{Canary: got}).Validate(); err != nil {
				t.Fatalf("Parse(%q) = %+v, which the host refuses: %v", ann, got, err)
			}
		}
	})
}
