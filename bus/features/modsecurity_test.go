package features

import (
	"slices"
	"strings"
	"testing"
)

func TestParseSecRuleEngine(t *testing.T) {
	for _, c := range []struct {
		snippet, want string
	}{
		{"SecRuleEngine On", "On"},
		{"SecRuleEngine On\n", "On"}, // a YAML block scalar's line break
		{"SecRuleEngine DetectionOnly", "DetectionOnly"},
		{"SecRuleEngine Off", "Off"},
		{"secruleengine on", "On"},
		{"SECRULEENGINE DETECTIONONLY", "DetectionOnly"},
		{"  SecRuleEngine\t\tOn  ", "On"},
		{"\n\r\nSecRuleEngine On\r\n\n", "On"},
		{"", ""},
		{"\n \n", ""},
		{"SecRuleEngine", ""},
		{"SecRuleEngine Maybe", ""},
		{"SecRuleEngine On Off", ""},
		{"SecRuleEngine On\nSecRuleEngine On", ""}, // one directive only
		{"SecRuleEngine On\nInclude /etc/passwd", ""},
		{"SecRuleEngine On # comment", ""},
		{"# comment\nSecRuleEngine On", ""},
		{`SecRuleEngine "On"`, ""},
		{"SecRuleEngine On;", ""},
		{"SecRuleEngineOn", ""},
		{"SecRuleRemoveById 1\nSecRuleEngine On", ""},
		{"ſecRuleEngine On", ""},     // U+017F folds to s in Unicode, not in ModSecurity
		{"SecRuleEngine On\x00", ""}, // no control characters
		{"SecRuleEngine\vOn", ""},
		{"SecRuleEngine On" + strings.Repeat(" ", 300), ""},
	} {
		got, ok := ParseSecRuleEngine(c.snippet)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("ParseSecRuleEngine(%q) = %q, %v; want %q", c.snippet, got, ok, c.want)
		}
	}
}

// FuzzParseSecRuleEngine: whatever the snippet, a recognized one gives one
// of the three modes, and only a snippet that holds nothing but that one
// directive (ASCII letters, spaces, tabs and line breaks) is recognized.
func FuzzParseSecRuleEngine(f *testing.F) {
	for _, s := range []string{"SecRuleEngine On\n", "secruleengine detectiononly", "SecRuleEngine Off\nInclude x", "SecRuleEngine \"On\"", "ſecRuleEngine On"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, snippet string) {
		mode, ok := ParseSecRuleEngine(snippet)
		if !ok {
			if mode != "" {
				t.Fatalf("%q: mode %q without ok", snippet, mode)
			}
			return
		}
		if !slices.Contains(ModSecurityEngines, mode) {
			t.Fatalf("%q: mode %q", snippet, mode)
		}
		words := strings.Fields(snippet)
		if len(words) != 2 || !strings.EqualFold(words[0], "SecRuleEngine") || !strings.EqualFold(words[1], mode) {
			t.Fatalf("%q recognized as %q but holds %q", snippet, mode, words)
		}
		if strings.Trim(snippet, " \t\r\nSsEeCcRrUuLlNnGgIiOoFfDdTtYy") != "" {
			t.Fatalf("%q recognized but holds other characters", snippet)
		}
		if err := (&Features{ModSecurity: &ModSecurity{Enabled: true, Engine: mode}}).Validate(); err != nil {
			t.Fatalf("%q: the recognized mode fails validation: %v", snippet, err)
		}
	})
}

func TestModSecurityEngineValidated(t *testing.T) {
	for _, engine := range []string{"on", "Maybe", "On\"", "DetectionOnly;"} {
		if err := (&Features{ModSecurity: &ModSecurity{Enabled: true, Engine: engine}}).Validate(); err == nil {
			t.Errorf("engine %q passed", engine)
		}
	}
}
