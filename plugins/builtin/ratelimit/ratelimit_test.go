package ratelimit

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
	cases := []struct {
		name    string
		in      map[string]string
		want    *bus.RateLimit
		errKeys []string // keys of rejecting errors
		warn    bool     // a warning is expected
	}{
		{"nothing", map[string]string{}, nil, nil, false},
		{"rps with default burst multiplier", map[string]string{KeyRPS: "10"},
			&bus.RateLimit{RPS: 10, BurstMultiplier: 5}, nil, false},
		{"all limits", map[string]string{KeyRPS: "1", KeyRPM: "30", KeyConnections: "2", KeyBurstMultiplier: "1", KeyRate: "100", KeyRateAfter: "512"},
			&bus.RateLimit{RPS: 1, RPM: 30, Connections: 2, BurstMultiplier: 1, RateKB: 100, RateAfterKB: 512}, nil, false},
		{"zero is no limit", map[string]string{KeyRPS: "0", KeyRPM: "0"}, nil, nil, false},
		{"limit-rate alone drops multiplier and allowlist", map[string]string{KeyRate: "50", KeyBurstMultiplier: "3", KeyAllowlist: "10.0.0.0/8"},
			&bus.RateLimit{RateKB: 50}, nil, false},
		{"allowlist canonical, sorted, unique", map[string]string{KeyRPM: "60", KeyAllowlist: " 127.0.0.1, 10.0.0.0/8,::1,127.0.0.1/32 ,"},
			&bus.RateLimit{RPM: 60, BurstMultiplier: 5, Allowlist: []string{"10.0.0.0/8", "127.0.0.1/32", "::1/128"}}, nil, false},
		{"host bits are cleared with a warning", map[string]string{KeyRPS: "5", KeyAllowlist: "192.168.11.20/24"},
			&bus.RateLimit{RPS: 5, BurstMultiplier: 5, Allowlist: []string{"192.168.11.0/24"}}, nil, true},
		{"empty allowlist", map[string]string{KeyConnections: "3", KeyAllowlist: ""},
			&bus.RateLimit{Connections: 3, BurstMultiplier: 5}, nil, false},
		{"connections above 65535", map[string]string{KeyConnections: "65536"}, nil, []string{KeyConnections}, false},
		{"rps above the maximum", map[string]string{KeyRPS: "1000001"}, nil, []string{KeyRPS}, false},
		{"not a number", map[string]string{KeyRPM: "1e3", KeyRate: "-1"}, nil, []string{KeyRPM, KeyRate}, false},
		{"bad CIDR", map[string]string{KeyRPS: "1", KeyAllowlist: "10.0.0.0/33"}, nil, []string{KeyAllowlist}, false},
		{"address with zone", map[string]string{KeyRPS: "1", KeyAllowlist: "fe80::1%eth0"}, nil, []string{KeyAllowlist}, false},
		{"a name is not an address", map[string]string{KeyRPS: "1", KeyAllowlist: "localhost"}, nil, []string{KeyAllowlist}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, errs := Parse(c.in)
			var rejecting []string
			warned := false
			for _, e := range errs {
				if e.Warning {
					warned = true
					continue
				}
				rejecting = append(rejecting, e.Key)
				if e.Message == "" {
					t.Errorf("error for %s has no message", e.Key)
				}
			}
			if !reflect.DeepEqual(rejecting, c.errKeys) {
				t.Fatalf("rejecting errors for %v, want %v (%v)", rejecting, c.errKeys, errs)
			}
			if warned != c.warn {
				t.Errorf("warning: %v, want %v (%v)", warned, c.warn, errs)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v, want %+v", got, c.want)
			}
			if got != nil {
				f := bus.Features{RateLimit: got}
				if err := f.Validate(); err != nil {
					t.Errorf("the host would refuse what the plugin returns: %v", err)
				}
			}
		})
	}
}

// TestDescribePatterns: the patterns the host checks compile, and admit
// what ingress-nginx manifests hold while refusing what could never parse.
func TestDescribePatterns(t *testing.T) {
	d := Plugin{}.Describe()
	patterns := map[string]*regexp.Regexp{}
	for _, a := range d.Annotations {
		patterns[a.Key] = regexp.MustCompile(`^(?:` + a.Pattern + `)$`)
		if a.Risk != plugins.RiskLow || a.Scope != plugins.ScopeLocation {
			t.Errorf("%s: risk %s scope %s, ingress-nginx has Low and location", a.Key, a.Risk, a.Scope)
		}
	}
	if len(patterns) != 7 {
		t.Fatalf("%d annotations, want 7", len(patterns))
	}
	for key, ok := range map[string][]string{KeyRPS: {"1", "100"}, KeyAllowlist: {"", "10.0.0.0/8,127.0.0.1", "10.0.0.0/8, ::1/128"}} {
		for _, v := range ok {
			if !patterns[key].MatchString(v) {
				t.Errorf("%s: %q refused", key, v)
			}
		}
	}
	for key, bad := range map[string][]string{KeyRPS: {"", "-1", "1.5", "1234567890", "1;"}, KeyAllowlist: {"10.0.0.0/8;", "$remote_addr", "a{"}} {
		for _, v := range bad {
			if patterns[key].MatchString(v) {
				t.Errorf("%s: %q admitted", key, v)
			}
		}
	}
	var aliases []string
	for _, a := range d.Annotations {
		aliases = append(aliases, a.Aliases...)
	}
	if !reflect.DeepEqual(aliases, []string{KeyWhitelist}) {
		t.Errorf("aliases %v, want limit-whitelist", aliases)
	}
}

func TestApply(t *testing.T) {
	res := plugintest.Apply(t, New(), []plugins.Ingress{
		{Namespace: "a", Name: "ok", Annotations: map[string]string{KeyRPS: "2"}},
		{Namespace: "a", Name: "bad", Annotations: map[string]string{KeyRPS: "2", KeyConnections: "99999"}},
		{Namespace: "b", Name: "none", Annotations: map[string]string{KeyBurstMultiplier: "2"}},
	})
	if len(res) != 3 {
		t.Fatalf("%d results", len(res))
	}
	if rl := res[0].Features.RateLimit; rl == nil || rl.RPS != 2 || len(res[0].Errors) != 0 {
		t.Errorf("ok: %+v", res[0])
	}
	if res[1].Features.RateLimit != nil || len(res[1].Errors) != 1 || res[1].Errors[0].Key != KeyConnections {
		t.Errorf("bad: %+v", res[1])
	}
	if !res[2].Features.IsZero() || len(res[2].Errors) != 0 || res[2].Name != "none" {
		t.Errorf("a multiplier alone limits nothing: %+v", res[2])
	}
}

// FuzzParse: the parsers never panic, and whatever they accept the host
// accepts too (bus validation), so a value that passes the plugin can
// always be rendered.
func FuzzParse(f *testing.F) {
	f.Add("10", "5", "127.0.0.1, 10.0.0.0/8")
	f.Add("999999999", "0", "::1,fd00::/8")
	f.Add("1", "1", "192.168.11.20/24")
	f.Add("01", "", "fe80::1%eth0")
	f.Add("-1", "x", "10.0.0.0/8;")
	f.Add("65535", "1000", "::ffff:1.2.3.4/128")
	f.Fuzz(func(t *testing.T, count, multiplier, allowlist string) {
		for _, max := range []int{bus.MaxConnectionLimit, bus.MaxRateLimit} {
			if n, err := ParseCount(count, max); err == nil && (n < 0 || n > max) {
				t.Fatalf("ParseCount(%q, %d) = %d", count, max, n)
			}
		}
		if cidrs, _, err := ParseAllowlist(allowlist); err == nil {
			f := bus.Features{RateLimit: &bus.RateLimit{RPS: 1, Allowlist: cidrs}}
			if err := f.Validate(); err != nil {
				t.Fatalf("ParseAllowlist(%q) = %q, refused by the host: %v", allowlist, cidrs, err)
			}
		}
		rl, errs := Parse(map[string]string{KeyConnections: count, KeyBurstMultiplier: multiplier, KeyAllowlist: allowlist, KeyRate: count})
		if rl != nil {
			if err := (&bus.Features{RateLimit: rl}).Validate(); err != nil {
				t.Fatalf("Parse gave %+v, refused by the host: %v", rl, err)
			}
		}
		for _, e := range errs {
			// Values are shown %q-quoted: nothing raw reaches Events.
			if e.Message == "" || strings.ContainsAny(e.Message, "\r\n\x00") {
				t.Fatalf("bad error message %q", e.Message)
			}
		}
	})
}
