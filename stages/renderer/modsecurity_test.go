package renderer

import (
	"reflect"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
	"switchyard.dev/switchyard/templates"
)

// TestLocationModSecurity follows ingress-nginx's choices: a location asks
// for what the ConfigMap does not already run, or turns it off.
func TestLocationModSecurity(t *testing.T) {
	defaultRules := "modsecurity_rules " + quoteStatic(templates.ModSecurityDefault)
	crs := "modsecurity_rules " + quoteStatic(templates.ModSecurityCoreRuleSet)
	on := bus.Settings{ModSecuritySettings: bus.ModSecuritySettings{EnableModSecurity: true}}
	onCRS := bus.Settings{ModSecuritySettings: bus.ModSecuritySettings{EnableModSecurity: true, EnableOWASPCoreRules: true}}
	for _, tc := range []struct {
		name     string
		cfg      ModSecurityConfig
		m        *bus.ModSecurity
		settings bus.Settings
		want     *modSecurityView
	}{
		{name: "none", want: nil},
		{name: "on", m: &bus.ModSecurity{Enabled: true}, want: &modSecurityView{On: true, Rules: []string{defaultRules}}},
		{name: "on with the CRS and an ID", m: &bus.ModSecurity{Enabled: true, OWASPRules: true, TransactionID: "$request_id"},
			want: &modSecurityView{On: true, Rules: []string{defaultRules, crs}, TransactionID: `"$request_id"`}},
		{name: "the operator's configuration", cfg: ModSecurityConfig{RulesFile: "/etc/waf/on.conf"}, m: &bus.ModSecurity{Enabled: true},
			want: &modSecurityView{On: true, Rules: []string{`modsecurity_rules_file "/etc/waf/on.conf"`}}},
		{name: "off without the ConfigMap writes nothing", m: &bus.ModSecurity{}, want: nil},
		{name: "inherit without the ConfigMap writes nothing", m: &bus.ModSecurity{Inherit: true, OWASPRules: true}, want: nil},
		{name: "off under the ConfigMap", m: &bus.ModSecurity{}, settings: on, want: &modSecurityView{Off: true}},
		{name: "on under the ConfigMap adds nothing", m: &bus.ModSecurity{Enabled: true}, settings: on, want: nil},
		{name: "the CRS under the ConfigMap", m: &bus.ModSecurity{Inherit: true, OWASPRules: true}, settings: on,
			want: &modSecurityView{Rules: []string{crs}}},
		{name: "the CRS once", m: &bus.ModSecurity{Enabled: true, OWASPRules: true, TransactionID: "x-${pid}"}, settings: onCRS,
			want: &modSecurityView{TransactionID: `"x-${pid}"`}},
		{name: "engine On before the configuration, whose SecRuleEngine it overrides", m: &bus.ModSecurity{Enabled: true, OWASPRules: true, Engine: "On"},
			want: &modSecurityView{On: true, Rules: []string{`modsecurity_rules "SecRuleEngine On"`, defaultRules, crs}}},
		{name: "engine under the ConfigMap", m: &bus.ModSecurity{Inherit: true, Engine: "DetectionOnly"}, settings: on,
			want: &modSecurityView{Rules: []string{`modsecurity_rules "SecRuleEngine DetectionOnly"`}}},
		{name: "engine where ModSecurity is off writes nothing", m: &bus.ModSecurity{Inherit: true, Engine: "On"}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := newLocationModSecurity(tc.cfg, &bus.Features{ModSecurity: tc.m}, tc.settings)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// TestLocationModSecurityRefusesBadValues: a value that slipped past the
// plugin is checked again before it is written.
func TestLocationModSecurityRefusesBadValues(t *testing.T) {
	for _, m := range []*bus.ModSecurity{
		{Enabled: true, TransactionID: `x"; load_module /tmp/x.so; #`},
		{Enabled: true, TransactionID: "$http_cookie"},
		{Enabled: true, Engine: `On"; load_module /tmp/x.so; #`},
	} {
		if _, err := newLocationModSecurity(ModSecurityConfig{}, &bus.Features{ModSecurity: m}, bus.Settings{}); err == nil {
			t.Errorf("%+v was written", m)
		}
	}
	if _, err := newLocationModSecurity(ModSecurityConfig{RulesFile: `/x"y`}, &bus.Features{ModSecurity: &bus.ModSecurity{Enabled: true}}, bus.Settings{}); err == nil {
		t.Error("a rules file with a quote was written")
	}
}

// TestServerModSecurityEngine: the ConfigMap's typed modsecurity-snippet
// goes before the configuration of every server enable-modsecurity turns
// on, so its mode wins.
func TestServerModSecurityEngine(t *testing.T) {
	s := bus.Settings{ModSecuritySettings: bus.ModSecuritySettings{EnableModSecurity: true, ModSecurityEngine: "On"}}
	v, err := newServerModSecurity(ModSecurityConfig{}, s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`modsecurity_rules "SecRuleEngine On"`, "modsecurity_rules " + quoteStatic(templates.ModSecurityDefault)}
	if !reflect.DeepEqual(v.Rules, want) {
		t.Errorf("rules %q, want %q", v.Rules, want)
	}
	s.ModSecurityEngine = `On"; load_module /tmp/x.so; #`
	if _, err := newServerModSecurity(ModSecurityConfig{}, s); err == nil {
		t.Error("an engine that is no mode was written")
	}
}

// TestModSecurityModuleLoadedOnlyInUse: nginx.conf loads the module while
// a server runs ModSecurity, and not before or after; where the module is
// missing, the location that asks for it answers 503 and is reported,
// and the others are served.
func TestModSecurityModuleLoadedOnlyInUse(t *testing.T) {
	const load = "ngx_http_modsecurity_module.so"
	plain := &bus.Server{Hostname: "plain.example.com", Locations: []bus.Location{{Path: "/", PathType: bus.PathPrefix, Backend: "web", Ingress: "default/plain"}}}
	waf := &bus.Server{Hostname: "waf.example.com", Locations: []bus.Location{{Path: "/", PathType: bus.PathPrefix, Backend: "web", Ingress: "default/waf",
		Features: &bus.Features{ModSecurity: &bus.ModSecurity{Enabled: true}}}}}
	r := newFileRenderer(DefaultConfig())
	r.SetServer("server.plain", plain)
	if _, errs := r.Flush(); len(errs) > 0 || strings.Contains(r.files[MainFile], load) {
		t.Fatalf("loaded without a user (%v)", errs)
	}
	r.SetServer("server.waf", waf)
	if _, errs := r.Flush(); len(errs) > 0 || !strings.Contains(r.files[MainFile], load) {
		t.Fatalf("not loaded with a user (%v)", errs)
	}
	r.SetServer("server.waf", nil)
	if _, errs := r.Flush(); len(errs) > 0 || strings.Contains(r.files[MainFile], load) {
		t.Fatalf("still loaded after the last user (%v)", errs)
	}

	cfg := DefaultConfig()
	cfg.ModSecurity.Unavailable = "the module is missing"
	missing := newFileRenderer(cfg)
	missing.SetServer("server.plain", plain)
	missing.SetServer("server.waf", waf)
	_, errs := missing.Flush()
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "default/waf") || !strings.Contains(errs[0].Error(), "503") {
		t.Fatalf("errors %v, want one naming default/waf and 503", errs)
	}
	text := missing.files[ServerFile("waf.example.com")]
	if strings.Contains(missing.files[MainFile], load) || strings.Contains(text, "modsecurity") || !strings.Contains(text, "return 503") {
		t.Errorf("the location asking for ModSecurity is not closed with 503:\n%s", text)
	}
	if !strings.Contains(missing.files[ServerFile("plain.example.com")], "balancer") {
		t.Error("the other server is not served")
	}
}

// TestGlobalModSecurityOnTheCatchAll: the ConfigMap's enable-modsecurity
// inspects the catch-all's requests too (unknown hosts, the default
// backend), and keeps every host in a server block of its own even with
// Lua routing, so a host's own choice (off, more rules) stays its own.
func TestGlobalModSecurityOnTheCatchAll(t *testing.T) {
	m := harness.ReadModel(t, "testdata/basic.model.json")
	if m.Settings == nil {
		settings := bus.DefaultSettings()
		m.Settings = &settings
	}
	for _, global := range []bool{false, true} {
		m.Settings.EnableModSecurity = global
		cfg := DefaultConfig()
		cfg.LuaRouting = true
		art, errs := Render(cfg, m)
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		catchAll := art.Files[ServerFile(bus.DefaultServerName)]
		if got := strings.Contains(catchAll, "modsecurity on;"); got != global {
			t.Errorf("enable-modsecurity %v: the catch-all runs ModSecurity: %v", global, got)
		}
		if routed := len(art.Routes) > 0; routed == global {
			t.Errorf("enable-modsecurity %v: %d hosts routed in Lua", global, len(art.Routes))
		}
	}
}
