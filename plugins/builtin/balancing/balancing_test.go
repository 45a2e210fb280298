package balancing

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/plugins"
	"switchyard.dev/switchyard/plugins/plugintest"
)

func cookieAffinity(mode string, c bus.CookieSessionAffinity) *bus.SessionAffinityConfig {
	if c.Name == "" {
		c.Name = bus.DefaultSessionCookieName
	}
	return &bus.SessionAffinityConfig{Name: "cookie", Mode: mode, CookieSessionAffinity: c}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		ann      map[string]string
		want     *bus.Balancing
		warnings []string // keys with a warning
		rejected []string // keys with a rejecting error
	}{
		{name: "none", ann: map[string]string{}},
		{name: "ewma", ann: map[string]string{KeyLoadBalance: "ewma"}, want: &bus.Balancing{LoadBalance: "ewma"}},
		{name: "round robin", ann: map[string]string{KeyLoadBalance: "round_robin"}, want: &bus.Balancing{LoadBalance: "round_robin"}},
		{name: "hash", ann: map[string]string{KeyHashBy: "$request_uri"},
			want: &bus.Balancing{UpstreamHash: &bus.UpstreamHashByConfig{UpstreamHashBy: "$request_uri"}}},
		{name: "hash subset default size", ann: map[string]string{KeyHashBy: "$remote_addr$host", KeyHashBySubset: "true"},
			want: &bus.Balancing{UpstreamHash: &bus.UpstreamHashByConfig{UpstreamHashBy: "$remote_addr$host", Subset: true, SubsetSize: 3}}},
		{name: "hash subset size", ann: map[string]string{KeyHashBy: "$arg_user", KeyHashBySubset: "True", KeyHashBySubsetSize: "7"},
			want: &bus.Balancing{UpstreamHash: &bus.UpstreamHashByConfig{UpstreamHashBy: "$arg_user", Subset: true, SubsetSize: 7}}},
		{name: "subset size without subset", ann: map[string]string{KeyHashBy: "x", KeyHashBySubsetSize: "7"},
			want: &bus.Balancing{UpstreamHash: &bus.UpstreamHashByConfig{UpstreamHashBy: "x"}}, warnings: []string{KeyHashBySubsetSize}},
		{name: "subset size out of range", ann: map[string]string{KeyHashBy: "x", KeyHashBySubset: "true", KeyHashBySubsetSize: "0"},
			rejected: []string{KeyHashBySubsetSize}},
		{name: "subset size too big", ann: map[string]string{KeyHashBy: "x", KeyHashBySubset: "true", KeyHashBySubsetSize: "1001"},
			rejected: []string{KeyHashBySubsetSize}},
		{name: "subset without hash", ann: map[string]string{KeyHashBySubset: "true", KeyHashBySubsetSize: "2"},
			warnings: []string{KeyHashBySubset, KeyHashBySubsetSize}},
		{name: "hash too long", ann: map[string]string{KeyHashBy: strings.Repeat("$a", 129)}, rejected: []string{KeyHashBy}},
		{name: "hash with braces", ann: map[string]string{KeyHashBy: "${request_uri}"}, rejected: []string{KeyHashBy}},
		{name: "hash lone dollar", ann: map[string]string{KeyHashBy: "a$"}, rejected: []string{KeyHashBy}},
		{name: "cookie defaults", ann: map[string]string{KeyAffinity: "cookie"},
			want: &bus.Balancing{Affinity: cookieAffinity("balanced", bus.CookieSessionAffinity{})}},
		{name: "cookie everything", ann: map[string]string{KeyAffinity: "cookie", KeyAffinityMode: "persistent",
			KeyCookieName: "route", KeyCookiePath: "/app", KeyCookieDomain: ".example.com", KeyCookieExpires: "3600",
			KeyCookieMaxAge: "60", KeyCookieSecure: "true", KeyCookieSameSite: "None", KeyCookieConditionalNone: "true",
			KeyCookieChangeOnFailure: "1", KeyAffinityCanaryBehavior: "legacy"},
			want: &bus.Balancing{AffinityCanaryBehavior: "legacy", Affinity: cookieAffinity("persistent", bus.CookieSessionAffinity{
				Name: "route", Path: "/app", Domain: ".example.com", Expires: "3600", MaxAge: "60", Secure: true,
				SameSite: "None", ConditionalSameSiteNone: true, ChangeOnFailure: true})}},
		{name: "canary behaviour sticky warns", ann: map[string]string{KeyAffinity: "cookie", KeyAffinityCanaryBehavior: "sticky"},
			want:     &bus.Balancing{AffinityCanaryBehavior: "sticky", Affinity: cookieAffinity("balanced", bus.CookieSessionAffinity{})},
			warnings: []string{KeyAffinityCanaryBehavior}},
		{name: "conditional none without None", ann: map[string]string{KeyAffinity: "cookie", KeyCookieConditionalNone: "true", KeyCookieSameSite: "Lax"},
			want:     &bus.Balancing{Affinity: cookieAffinity("balanced", bus.CookieSessionAffinity{SameSite: "Lax", ConditionalSameSiteNone: true})},
			warnings: []string{KeyCookieConditionalNone}},
		{name: "cookie keys without affinity", ann: map[string]string{KeyCookieName: "x", KeyAffinityMode: "persistent"},
			warnings: []string{KeyAffinityMode, KeyCookieName}},
		{name: "affinity wins over hash and load-balance", ann: map[string]string{KeyAffinity: "cookie", KeyHashBy: "$uri", KeyLoadBalance: "ewma"},
			want:     &bus.Balancing{Affinity: cookieAffinity("balanced", bus.CookieSessionAffinity{})},
			warnings: []string{KeyHashBy, KeyLoadBalance}},
		{name: "hash wins over load-balance", ann: map[string]string{KeyHashBy: "$uri", KeyLoadBalance: "ewma"},
			want:     &bus.Balancing{UpstreamHash: &bus.UpstreamHashByConfig{UpstreamHashBy: "$uri"}},
			warnings: []string{KeyLoadBalance}},
		{name: "chash with hash is redundant", ann: map[string]string{KeyHashBy: "$uri", KeyLoadBalance: "chash"},
			want: &bus.Balancing{UpstreamHash: &bus.UpstreamHashByConfig{UpstreamHashBy: "$uri"}}},
		{name: "chash alone", ann: map[string]string{KeyLoadBalance: "chash"}, warnings: []string{KeyLoadBalance}},
		{name: "sticky alone", ann: map[string]string{KeyLoadBalance: "sticky_persistent"}, warnings: []string{KeyLoadBalance}},
		{name: "unknown algorithm", ann: map[string]string{KeyLoadBalance: "least_conn"}, rejected: []string{KeyLoadBalance}},
		{name: "affinity not cookie", ann: map[string]string{KeyAffinity: "ip"}, rejected: []string{KeyAffinity}},
		{name: "bad mode", ann: map[string]string{KeyAffinity: "cookie", KeyAffinityMode: "sometimes"}, rejected: []string{KeyAffinityMode}},
		{name: "bad domain label", ann: map[string]string{KeyAffinity: "cookie", KeyCookieDomain: "a..b"}, rejected: []string{KeyCookieDomain}},
		{name: "bad path", ann: map[string]string{KeyAffinity: "cookie", KeyCookiePath: "/a;Secure"}, rejected: []string{KeyCookiePath}},
		{name: "empty cookie name", ann: map[string]string{KeyAffinity: "cookie", KeyCookieName: ""}, rejected: []string{KeyCookieName}},
		{name: "bad bool", ann: map[string]string{KeyAffinity: "cookie", KeyCookieSecure: "yes"}, rejected: []string{KeyCookieSecure}},
		{name: "bad expires", ann: map[string]string{KeyAffinity: "cookie", KeyCookieExpires: "1h"}, rejected: []string{KeyCookieExpires}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, errs := Parse(tt.ann)
			var warnings, rejected []string
			for _, e := range errs {
				if e.Message == "" {
					t.Errorf("error without message: %+v", e)
				}
				if e.Warning {
					warnings = append(warnings, e.Key)
				} else {
					rejected = append(rejected, e.Key)
				}
			}
			if !equalSets(warnings, tt.warnings) || !equalSets(rejected, tt.rejected) {
				t.Fatalf("warnings %v rejected %v, want %v and %v (%+v)", warnings, rejected, tt.warnings, tt.rejected, errs)
			}
			if len(tt.rejected) > 0 {
				if got != nil {
					t.Fatalf("rejected, but got %+v", got)
				}
				return
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			if err := (&bus.Features{Balancing: got}).Validate(); err != nil {
				t.Fatalf("the host refuses %+v: %v", got, err)
			}
		})
	}
}

func equalSets(a, b []string) bool {
	m := map[string]int{}
	for _, x := range a {
		m[x]++
	}
	for _, x := range b {
		m[x]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return true
}

// TestPatterns checks that the host's patterns refuse what could end a
// directive or a cookie attribute, and accept ingress-nginx's examples.
func TestPatterns(t *testing.T) {
	patterns := compiledPatterns()
	for _, tt := range []struct {
		key       string
		good, bad []string
	}{
		{KeyLoadBalance, []string{"round_robin", "ewma", "chash", "sticky_balanced"}, []string{"EWMA", "ewma;", "least_conn", ""}},
		{KeyHashBy, []string{"$request_uri", "$remote_addr$host", "$arg_a-b", "user:$cookie_id"},
			[]string{"${request_uri}", "$", "a b", `"$uri"`, "$uri;", "a{b}", ""}},
		{KeyHashBySubsetSize, []string{"3", "1000"}, []string{"-1", "10000", "3.5"}},
		{KeyAffinity, []string{"cookie"}, []string{"Cookie", "ip"}},
		{KeyAffinityMode, []string{"balanced", "persistent"}, []string{"sticky"}},
		{KeyAffinityCanaryBehavior, []string{"sticky", "legacy"}, []string{"none"}},
		{KeyCookieName, []string{"INGRESSCOOKIE", "route_1.a-b"}, []string{"a=b", "a;b", "a$b", "a'b", `a"b`, ""}},
		{KeyCookiePath, []string{"/", "/app/v1", "/%20"}, []string{"app", "/a;b", "/a b", "/a,b", "/$x", "/'"}},
		{KeyCookieDomain, []string{"example.com", ".example.com", "a-b.c"}, []string{"-a.com", "a.com.", "a_b.com", "a;b"}},
		{KeyCookieExpires, []string{"0", "172800"}, []string{"1h", "-1", "12345678901"}},
		{KeyCookieSameSite, []string{"None", "Lax", "Strict"}, []string{"none", "lax;"}},
		{KeyCookieSecure, []string{"true", "False"}, []string{"yes"}},
	} {
		re := patterns[tt.key]
		if re == nil {
			t.Fatalf("no annotation %s", tt.key)
		}
		for _, v := range tt.good {
			if !re.MatchString(v) {
				t.Errorf("%s: %q refused", tt.key, v)
			}
		}
		for _, v := range tt.bad {
			if re.MatchString(v) {
				t.Errorf("%s: %q accepted", tt.key, v)
			}
		}
	}
}

// TestRisk keeps ingress-nginx's risk levels (upstream-hash-by is High).
func TestRisk(t *testing.T) {
	want := map[string]plugins.Risk{KeyHashBy: plugins.RiskHigh, KeyAffinityMode: plugins.RiskMedium,
		KeyCookieName: plugins.RiskMedium, KeyCookiePath: plugins.RiskMedium, KeyCookieDomain: plugins.RiskMedium,
		KeyCookieExpires: plugins.RiskMedium, KeyCookieMaxAge: plugins.RiskMedium}
	anns := (Plugin{}).Describe().Annotations
	if len(anns) != 16 {
		t.Fatalf("%d annotations, want 16", len(anns))
	}
	for _, a := range anns {
		w, ok := want[a.Key]
		if !ok {
			w = plugins.RiskLow
		}
		if a.Risk != w {
			t.Errorf("%s: risk %s, want %s", a.Key, a.Risk, w)
		}
	}
}

func TestApply(t *testing.T) {
	got := plugintest.Apply(t, New(), []plugins.Ingress{
		{Namespace: "a", Name: "hash", Annotations: map[string]string{KeyHashBy: "$request_uri"}},
		{Namespace: "a", Name: "bad", Annotations: map[string]string{KeyLoadBalance: "least_conn"}},
		{Namespace: "b", Name: "none", Annotations: map[string]string{}},
	})
	if len(got) != 3 {
		t.Fatalf("%d results, want 3", len(got))
	}
	if h := got[0].Features.Balancing; h == nil || h.UpstreamHash == nil || h.UpstreamHash.UpstreamHashBy != "$request_uri" || len(got[0].Errors) != 0 {
		t.Errorf("hash: %+v", got[0])
	}
	if got[1].Features.Balancing != nil || len(got[1].Errors) != 1 || got[1].Errors[0].Warning {
		t.Errorf("bad: %+v", got[1])
	}
	if !got[2].Features.IsZero() || len(got[2].Errors) != 0 || got[2].Name != "none" {
		t.Errorf("none: %+v", got[2])
	}
}

func compiledPatterns() map[string]*regexp.Regexp {
	patterns := map[string]*regexp.Regexp{}
	for _, a := range (Plugin{}).Describe().Annotations {
		patterns[a.Key] = regexp.MustCompile(`^(?:` + a.Pattern + `)$`)
	}
	return patterns
}

// FuzzParse checks that whatever passes the host's patterns either is
// rejected with a keyed error, or gives features the host accepts and
// that reach a Backend the Lua side accepts too.
func FuzzParse(f *testing.F) {
	f.Add("ewma", "$request_uri", "true", "3", "cookie", "persistent", "route", "/app", ".example.com", "60", "None", "true")
	f.Add("chash", "a$", "1", "0", "", "", "", "", "a..b", "1h", "", "")
	f.Add("round_robin", "", "", "1001", "cookie", "balanced", "", "/", "-x", "", "Lax", "f")
	patterns := compiledPatterns()
	f.Fuzz(func(t *testing.T, lb, hashBy, subset, size, affinity, mode, name, path, domain, maxAge, sameSite, secure string) {
		ann := map[string]string{}
		for k, v := range map[string]string{KeyLoadBalance: lb, KeyHashBy: hashBy, KeyHashBySubset: subset,
			KeyHashBySubsetSize: size, KeyAffinity: affinity, KeyAffinityMode: mode, KeyCookieName: name,
			KeyCookiePath: path, KeyCookieDomain: domain, KeyCookieMaxAge: maxAge, KeyCookieSameSite: sameSite,
			KeyCookieSecure: secure} {
			if v != "" && patterns[k].MatchString(v) {
				ann[k] = v
			}
		}
		got, errs := Parse(ann)
		rejected := false
		for _, e := range errs {
			if e.Key == "" || e.Message == "" {
				t.Fatalf("error without key or message: %+v", e)
			}
			if _, ok := patterns[e.Key]; !ok {
				t.Fatalf("error on unknown key %q", e.Key)
			}
			rejected = rejected || !e.Warning
		}
		if rejected && got != nil {
			t.Fatalf("rejected but returned %+v", got)
		}
		if got == nil {
			return
		}
		if err := (&bus.Features{Balancing: got}).Validate(); err != nil {
			t.Fatalf("Parse(%q) = %+v, which the host refuses: %v", ann, got, err)
		}
		// What the annotations stage puts on the backend (its
		// applyBalancing, with the default round_robin).
		b := bus.Backend{LoadBalance: got.LoadBalance, UpstreamHashByConfig: got.UpstreamHash, SessionAffinityConfig: got.Affinity}
		if err := b.Validate(); err != nil {
			t.Fatalf("Parse(%q) gives a backend the renderer refuses: %v", ann, err)
		}
	})
}
