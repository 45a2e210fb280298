package renderer

import (
	"fmt"
	"strings"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/templates"
)

// ModSecurityConfig is how NGINX runs ModSecurity on this machine (the run
// flags fill it in).
type ModSecurityConfig struct {
	// Unavailable says why ModSecurity cannot run here (Debian's module
	// or Core Rule Set is not installed); "" when it can. A location that
	// asks for it then fails closed with 503.
	Unavailable string
	// RulesFile is --modsecurity-config: the operator's ModSecurity
	// configuration, an absolute path, in place of Switchyard's default
	// (templates/modsecurity_default.conf, SecRuleEngine DetectionOnly).
	RulesFile string
}

// CoreRuleSetFiles are what the Core Rule Set needs of Debian's
// modsecurity-crs (templates/modsecurity_crs.conf includes them).
var CoreRuleSetFiles = []string{"/etc/modsecurity/crs/crs-setup.conf", "/usr/share/modsecurity-crs/rules"}

// ModSecurityModule is Debian's libnginx-mod-http-modsecurity, loaded
// only while some server runs ModSecurity.
const ModSecurityModule = "ngx_http_modsecurity_module.so"

// modSecurityView is what a server or a location writes of ModSecurity,
// every path quoted.
type modSecurityView struct {
	// Source attributes the server's lines to the ConfigMap.
	Source string
	// Off: "modsecurity off" (enable-modsecurity: "false" under the
	// ConfigMap's enable-modsecurity).
	Off bool
	// On: "modsecurity on" with the configuration in Rules; a location
	// under the ConfigMap's enable-modsecurity only adds the Core Rule Set
	// there. Each is a modsecurity_rules (Switchyard's text, quoted) or a
	// modsecurity_rules_file (a quoted path) directive, without ";".
	On    bool
	Rules []string
	// TransactionID is modsecurity_transaction_id's argument, quoted.
	TransactionID string
}

// modSecurityOn says whether ModSecurity inspects a location's requests.
func modSecurityOn(f *bus.Features, s bus.Settings) bool {
	if f == nil || f.ModSecurity == nil {
		return s.EnableModSecurity
	}
	if f.ModSecurity.Inherit {
		return s.EnableModSecurity
	}
	return f.ModSecurity.Enabled
}

// newServerModSecurity is the ConfigMap's enable-modsecurity, written in
// every server of an Ingress; nil when it is off.
func newServerModSecurity(cfg ModSecurityConfig, s bus.Settings) (*modSecurityView, error) {
	if !s.EnableModSecurity {
		return nil, nil
	}
	v := &modSecurityView{On: true}
	if err := v.addConfiguration(cfg, s.EnableOWASPCoreRules); err != nil {
		return nil, err
	}
	if err := v.setEngine(s.ModSecurityEngine); err != nil {
		return nil, fmt.Errorf("modsecurity-snippet: %w", err)
	}
	return v, nil
}

// newLocationModSecurity follows ingress-nginx: a location asks for what
// the server does not already run (the ConfigMap's enable-modsecurity and
// enable-owasp-modsecurity-crs), or turns it off; nil when it writes
// nothing.
func newLocationModSecurity(cfg ModSecurityConfig, f *bus.Features, s bus.Settings) (*modSecurityView, error) {
	if f == nil || f.ModSecurity == nil {
		return nil, nil
	}
	m := f.ModSecurity
	if !modSecurityOn(f, s) {
		if s.EnableModSecurity {
			return &modSecurityView{Off: true}, nil
		}
		return nil, nil
	}
	v := &modSecurityView{}
	if !s.EnableModSecurity {
		v.On = true
		if err := v.addConfiguration(cfg, m.OWASPRules); err != nil {
			return nil, err
		}
	} else if m.OWASPRules && !s.EnableOWASPCoreRules {
		v.addCoreRuleSet()
	}
	if err := v.setEngine(m.Engine); err != nil {
		return nil, err
	}
	if m.TransactionID != "" {
		// Validate checks the whole value against its pattern (letters,
		// digits, . _ : - and whole variables, ${name} included, which
		// quoteVariables would refuse for the braces): nothing in it can
		// end the quoted string.
		if err := (&bus.Features{ModSecurity: m}).Validate(); err != nil {
			return nil, err
		}
		v.TransactionID = `"` + m.TransactionID + `"`
	}
	if !v.On && len(v.Rules) == 0 && v.TransactionID == "" {
		return nil, nil
	}
	return v, nil
}

// addConfiguration adds the base configuration (the operator's file or
// the default) and, when asked, the Core Rule Set after it.
func (v *modSecurityView) addConfiguration(cfg ModSecurityConfig, crs bool) error {
	if cfg.RulesFile != "" {
		q, err := quote(cfg.RulesFile)
		if err != nil {
			return fmt.Errorf("modsecurity config: %w", err)
		}
		v.Rules = append(v.Rules, "modsecurity_rules_file "+q)
	} else {
		v.Rules = append(v.Rules, "modsecurity_rules "+quoteStatic(templates.ModSecurityDefault))
	}
	if crs {
		v.addCoreRuleSet()
	}
	return nil
}

// setEngine writes a SecRuleEngine mode ("" for none) before the rules.
// It goes first: ModSecurity keeps the first SecRuleEngine a rules set
// reads (its merge fills only what is unset), so this one wins over the
// configuration's, and a location's over its server's.
func (v *modSecurityView) setEngine(mode string) error {
	if mode == "" {
		return nil
	}
	// Validate checks the mode is one of three words.
	if err := (&bus.Features{ModSecurity: &bus.ModSecurity{Engine: mode}}).Validate(); err != nil {
		return err
	}
	v.Rules = append([]string{"modsecurity_rules " + quoteStatic("SecRuleEngine "+mode)}, v.Rules...)
	return nil
}

func (v *modSecurityView) addCoreRuleSet() {
	v.Rules = append(v.Rules, "modsecurity_rules "+quoteStatic(templates.ModSecurityCoreRuleSet))
}

// quoteStatic quotes Switchyard's own text (never user input) for NGINX,
// which reads \\ and \" back as \ and ".
func quoteStatic(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// usesModSecurity says whether a rendered server runs ModSecurity anywhere.
// The catch-all does under the ConfigMap's enable-modsecurity, as every
// server does in ingress-nginx (modsecurity on in the http block): requests
// for hosts no Ingress names, and those its default backend answers, are
// inspected too.
func usesModSecurity(s *bus.Server, settings bus.Settings) bool {
	if s.Hostname == bus.DefaultServerName {
		return settings.EnableModSecurity
	}
	for _, l := range s.Locations {
		if l.Ingress != "" && modSecurityOn(l.Features, settings) {
			return true
		}
	}
	return false
}

// withoutModSecurity fails closed where ModSecurity cannot run on this
// machine: each location that asks for it answers 503, and the error
// names its Ingress. The other locations are served.
func withoutModSecurity(cfg ModSecurityConfig, settings bus.Settings, s *bus.Server) (*bus.Server, []error) {
	if cfg.Unavailable == "" {
		return s, nil
	}
	var out *bus.Server
	var errs []error
	for i, l := range s.Locations {
		if l.Ingress == "" || !modSecurityOn(l.Features, settings) || (l.Features != nil && l.Features.Deny != nil) {
			continue
		}
		if out == nil {
			copied := *s
			copied.Locations = append([]bus.Location(nil), s.Locations...)
			out = &copied
		}
		f := bus.Features{}
		if l.Features != nil {
			f = *l.Features
		}
		f.Deny = &bus.Deny{Status: 503, Reason: "ModSecurity cannot run: " + cfg.Unavailable}
		out.Locations[i].Features = &f
		errs = append(errs, fmt.Errorf("render server %s: path %q of Ingress %s answers 503: it asks for ModSecurity, which cannot run (%s)",
			s.Hostname, l.Path, l.Ingress, cfg.Unavailable))
	}
	if out == nil {
		return s, nil
	}
	return out, errs
}
