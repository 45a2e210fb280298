package features

import (
	"fmt"
	"regexp"
	"strings"
)

// ModSecurity is the modsecurity plugin's group: the location runs the
// ModSecurity web application firewall (Debian's ModSecurity v3 connector
// for NGINX), as ingress-nginx's enable-modsecurity annotations ask.
type ModSecurity struct {
	// Enabled is enable-modsecurity: true turns ModSecurity on for the
	// location with the default configuration (SecRuleEngine
	// DetectionOnly unless the operator replaced it); false turns it off
	// where the ConfigMap's enable-modsecurity turned it on.
	Enabled bool `json:"enabled"`
	// Inherit: enable-modsecurity is not set, so the ConfigMap's
	// enable-modsecurity decides; OWASPRules and TransactionID then apply
	// only where it is true (as in ingress-nginx).
	Inherit bool `json:"inherit,omitempty"`
	// OWASPRules is enable-owasp-core-rules: the OWASP Core Rule Set too.
	OWASPRules bool `json:"owaspRules,omitempty"`
	// TransactionID is modsecurity-transaction-id: the ID ModSecurity
	// gives each request ("$request_id" ties it to the access log).
	TransactionID string `json:"transactionID,omitempty"`
	// Engine is a modsecurity-snippet that is exactly one SecRuleEngine
	// line (ParseSecRuleEngine): the location's engine mode, one of
	// ModSecurityEngines; "" leaves the configuration's (DetectionOnly by
	// default).
	Engine string `json:"engine,omitempty"`
}

// ModSecurityEngines are SecRuleEngine's modes, as ModSecurity spells
// them: blocking, logging only, and off.
var ModSecurityEngines = []string{"On", "DetectionOnly", "Off"}

// ModSecurityEnginePattern is a mode of ModSecurityEngines, whole.
const ModSecurityEnginePattern = `On|DetectionOnly|Off`

// maxSecRuleEngineSnippet bounds the snippet ParseSecRuleEngine reads: one
// directive and generous whitespace.
const maxSecRuleEngineSnippet = 256

// ParseSecRuleEngine recognizes a modsecurity-snippet whose whole value is
// one "SecRuleEngine <mode>" directive, read as ModSecurity's parser
// reads it: the directive and the mode in any ASCII case, separated by
// spaces or tabs, on one line that blank lines, spaces and tabs may
// surround (a YAML block scalar ends with a line break). It returns the
// mode as ModSecurityEngines spells it. Anything else (a second
// directive, a comment, quotes, a non-ASCII letter that would fold to an
// ASCII one) is not recognized: such a snippet stays a snippet.
func ParseSecRuleEngine(snippet string) (mode string, ok bool) {
	if len(snippet) > maxSecRuleEngineSnippet {
		return "", false
	}
	for i := 0; i < len(snippet); i++ {
		if c := snippet[i]; c > '~' || (c < ' ' && c != '\t' && c != '\n' && c != '\r') {
			return "", false
		}
	}
	lines := strings.FieldsFunc(snippet, func(r rune) bool { return r == '\n' || r == '\r' })
	for _, line := range lines {
		words := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(words) == 0 {
			continue
		}
		if mode != "" || len(words) != 2 || !strings.EqualFold(words[0], "SecRuleEngine") {
			return "", false
		}
		if mode = engineMode(words[1]); mode == "" {
			return "", false
		}
	}
	return mode, mode != ""
}

// engineMode is word as a mode of ModSecurityEngines (any ASCII case), or "".
func engineMode(word string) string {
	for _, m := range ModSecurityEngines {
		if strings.EqualFold(word, m) {
			return m
		}
	}
	return ""
}

// ModSecurityTransactionIDSource is modsecurity-transaction-id: letters,
// digits and . _ : -, and the variables of modSecurityIDVariables, each
// written ${name} or as $name at the end or before one of . : -, so the
// name is always whole (no $request_id_x that NGINX would read as another
// variable). Nothing that could end the quoted string it is written in.
const ModSecurityTransactionIDSource = `(?:[A-Za-z0-9._:-]|\$\{(?:` + modSecurityIDVariables + `)\}|\$(?:` + modSecurityIDVariables + `)(?:[.:-]|$))+`

// modSecurityIDVariables are the NGINX variables a transaction ID may
// hold: request and connection identifiers, nothing that holds spaces.
const modSecurityIDVariables = `request_id|http_x_request_id|connection|connection_requests|msec|pid|hostname|remote_addr|remote_port|server_addr|server_port|time_iso8601`

// ModSecurityTransactionIDPattern is ModSecurityTransactionIDSource as a
// whole-string pattern.
var ModSecurityTransactionIDPattern = regexp.MustCompile(`^(?:` + ModSecurityTransactionIDSource + `)$`)

// MaxModSecurityTransactionID bounds modsecurity-transaction-id's length.
const MaxModSecurityTransactionID = 256

func (m *ModSecurity) validate() error {
	if m == nil {
		return nil
	}
	if m.Enabled && m.Inherit {
		return fmt.Errorf("enabled and inherit at once")
	}
	if m.Engine != "" && engineMode(m.Engine) != m.Engine {
		return fmt.Errorf("engine %q is not one of %s", m.Engine, strings.Join(ModSecurityEngines, ", "))
	}
	if m.TransactionID == "" {
		return nil
	}
	if len(m.TransactionID) > MaxModSecurityTransactionID || !ModSecurityTransactionIDPattern.MatchString(m.TransactionID) {
		return fmt.Errorf("transaction ID %q is not letters, digits, . _ : - and whole variables such as $request_id", m.TransactionID)
	}
	return nil
}
