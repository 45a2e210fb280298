package features

import (
	"fmt"
	"regexp"
	"strings"
)

// Canary is the traffic-shaping policy of a canary Ingress (the canary
// plugin's group). It never reaches nginx.conf: the annotations stage puts
// it on the canary's backend as ingress-nginx's trafficShapingPolicy, and
// the Lua balancer reads it, so a weight change is a backend push, not a
// reload. The JSON tags are ingress-nginx's.
type Canary struct {
	// Weight out of WeightTotal requests go to the canary when neither
	// header nor cookie decided.
	Weight      int `json:"weight"`
	WeightTotal int `json:"weightTotal"`
	// Header routes by a request header: "always"/"never", or HeaderValue
	// exactly, or HeaderPattern as a regular expression (ngx.re, PCRE).
	Header        string `json:"header,omitempty"`
	HeaderValue   string `json:"headerValue,omitempty"`
	HeaderPattern string `json:"headerPattern,omitempty"`
	// Cookie routes by a cookie whose value is "always" or "never".
	Cookie string `json:"cookie,omitempty"`
}

// TrafficShapingPolicy is ingress-nginx's name for the policy a canary
// backend carries.
type TrafficShapingPolicy = Canary

// MaxCanaryWeightTotal bounds canary-weight-total: math.random in LuaJIT
// takes any int, but a bound keeps the values readable and the fuzzers
// honest.
const MaxCanaryWeightTotal = 1000000

var (
	// canaryHeaderPattern: a header name NGINX can look up as $http_<name>
	// (letters, digits, '-' and '_').
	canaryHeaderPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)
	// canaryCookiePattern: a cookie name NGINX can look up as $cookie_<name>.
	canaryCookiePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	// canaryHeaderPatternChars: a regular expression goes only into the
	// Lua balancer's JSON, never into nginx.conf, so it may hold '\', '$'
	// and braces, which regexps need; quotes and control characters are
	// still refused.
	canaryRegexpChars = regexp.MustCompile(`^[ !#-&(-~]{1,256}$`)
)

// validate checks every field against a whole-string pattern.
func (c *Canary) validate() error {
	if c.WeightTotal < 1 || c.WeightTotal > MaxCanaryWeightTotal {
		return fmt.Errorf("weightTotal %d is not between 1 and %d", c.WeightTotal, MaxCanaryWeightTotal)
	}
	if c.Weight < 0 || c.Weight > c.WeightTotal {
		return fmt.Errorf("weight %d is not between 0 and weightTotal %d", c.Weight, c.WeightTotal)
	}
	if c.Header != "" && !canaryHeaderPattern.MatchString(c.Header) {
		return fmt.Errorf("header %q is not a header name of letters, digits, '-' and '_'", c.Header)
	}
	if c.Header == "" && (c.HeaderValue != "" || c.HeaderPattern != "") {
		return fmt.Errorf("headerValue and headerPattern need a header")
	}
	if c.HeaderValue != "" && !headerValuePattern.MatchString(c.HeaderValue) {
		return fmt.Errorf("headerValue holds a character that is not allowed (quotes, backslash, $, braces or control characters) or is over 1000 bytes")
	}
	if c.HeaderPattern != "" {
		if err := ValidateCanaryPattern(c.HeaderPattern); err != nil {
			return fmt.Errorf("headerPattern: %w", err)
		}
	}
	if c.Cookie != "" && !canaryCookiePattern.MatchString(c.Cookie) {
		return fmt.Errorf("cookie %q is not a cookie name of letters, digits, '.', '-' and '_'", c.Cookie)
	}
	return nil
}

// ValidateCanaryPattern checks a canary-by-header-pattern: printable ASCII
// without quotes, at most 256 bytes, in the safe regex grammar
// (regex_safe.go) that PCRE (ngx.re) and RE2 read the same way and that
// cannot backtrack catastrophically; Go's compiler checks it once more.
func ValidateCanaryPattern(p string) error {
	if !canaryRegexpChars.MatchString(p) {
		return fmt.Errorf("the pattern must be 1 to 256 printable ASCII characters without quotes")
	}
	if err := ParseSafeRegex(p, RegexHeader); err != nil {
		return fmt.Errorf("not an accepted regular expression: %w", err)
	}
	if _, err := regexp.Compile(p); err != nil {
		// Go's message repeats the pattern; keep only what is wrong.
		msg := err.Error()
		if i := strings.Index(msg, ": `"); i > 0 {
			msg = msg[:i]
		}
		return fmt.Errorf("not a valid regular expression (%s)", msg)
	}
	return nil
}
