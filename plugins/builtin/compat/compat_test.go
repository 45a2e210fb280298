package compat

import (
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/plugintest"
)

func TestCheck(t *testing.T) {
	type want int
	const (
		none want = iota
		reject
		warn
	)
	cases := []struct {
		key, value string
		want       want
		msg        string // a part of the message, when not none
	}{
		// Empty is absent, as in ingress-nginx.
		{"mirror-target", "", none, ""},

		// Invalid values reject with what is wrong.
		{"mirror-target", `https://x/$(curl evil)`, reject, "does not match"},
		{"mirror-host", `x; load_module /tmp/x.so`, reject, "does not match"},
		{"mirror-host", `${x}`, reject, "does not match"},
		{"mirror-request-body", "yes", reject, "does not match"},

		// Not access control: a valid value is a warning.
		{"mirror-target", "https://test.env.com/$request_uri", warn, "ignored"},
		{"mirror-host", "test.env.com", warn, "ignored"},
		{"mirror-request-body", "false", warn, "ignored"},

		{"not-ours", "x", reject, "not an annotation of the compat plugin"},
	}
	for _, c := range cases {
		e, ok := Check(c.key, c.value)
		got := none
		if ok {
			got = reject
			if e.Warning {
				got = warn
			}
		}
		if got != c.want {
			t.Errorf("Check(%s, %q) = %+v (%v), want kind %d", c.key, c.value, e, ok, c.want)
			continue
		}
		if ok && (e.Key != c.key || !strings.Contains(e.Message, c.msg)) {
			t.Errorf("Check(%s, %q) = %+v, want key %s and a message with %q", c.key, c.value, e, c.key, c.msg)
		}
	}
}

// TestDescribe checks what the host relies on: every pattern compiles as
// the host compiles it, each key has ingress-nginx's risk level, and no key
// belongs to another engineer's plugin.
func TestDescribe(t *testing.T) {
	d := New().Describe()
	risks := map[string]plugins.Risk{
		"mirror-target": plugins.RiskHigh, "mirror-host": plugins.RiskHigh, "mirror-request-body": plugins.RiskLow,
	}
	if d.Name != "compat" || len(d.Annotations) != len(risks) {
		t.Fatalf("describe: name %q, %d annotations, want compat and %d", d.Name, len(d.Annotations), len(risks))
	}
	for _, a := range d.Annotations {
		if _, err := regexp.Compile(`^(?:` + a.Pattern + `)$`); err != nil {
			t.Errorf("%s: pattern: %v", a.Key, err)
		}
		if want, ok := risks[a.Key]; !ok || a.Risk != want {
			t.Errorf("%s: risk %s, want %s", a.Key, a.Risk, want)
		}
	}
}

func TestApply(t *testing.T) {
	batch := []plugins.Ingress{
		{Namespace: "a", Name: "both", Annotations: map[string]string{"mirror-request-body": "yes", "mirror-host": "m.example.com"}},
		{Namespace: "a", Name: "mirror", Annotations: map[string]string{"mirror-target": "https://m.example.com/"}},
	}
	results := plugintest.Apply(t, New(), batch)
	if len(results) != 2 {
		t.Fatalf("%d results, want 2", len(results))
	}
	for _, r := range results {
		if !r.Features.IsZero() {
			t.Errorf("%s: features %+v: the guard must never return features", r.Name, r.Features)
		}
	}
	if e := results[0].Errors; len(e) != 2 || e[0].Key != "mirror-host" || !e[0].Warning || e[1].Key != "mirror-request-body" || e[1].Warning {
		t.Errorf("both: errors %+v, want a warning for mirror-host then a rejection for mirror-request-body", e)
	}
	if e := results[1].Errors; len(e) != 1 || !e[0].Warning {
		t.Errorf("mirror: errors %+v, want one warning", e)
	}
}

// FuzzCheck: whatever the value, Check does not panic, and a value it lets
// through (warning or nothing) holds none of the characters that end an
// NGINX string or directive. "$" only for mirror-target, which ingress-nginx
// documents with a variable.
func FuzzCheck(f *testing.F) {
	for _, k := range Keys() {
		f.Add(k, "x")
	}
	f.Add("mirror-target", "https://a/$request_uri")
	f.Fuzz(func(t *testing.T, key, value string) {
		e, ok := Check(key, value)
		if ok && !e.Warning {
			return
		}
		forbidden := "\"'\\;{}\r\n\x00`"
		if key != "mirror-target" {
			forbidden += "$"
		}
		if strings.ContainsAny(value, forbidden) {
			t.Fatalf("Check(%s, %q) let through a value with one of %q", key, value, forbidden)
		}
	})
}
