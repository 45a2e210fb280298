package features

import (
	"fmt"
	"regexp"
)

// Rewrite is the rewrite plugin's group.
type Rewrite struct {
	// Target is rewrite-target: the URI sent upstream, in which $1…$9 are
	// the capture groups of the location's path regex.
	Target string `json:"target,omitempty"`
	// UseRegex makes the paths of the Ingress regular expressions (all of
	// them, as ingress-nginx). Unlike ingress-nginx, the other Ingresses of
	// the host keep their Exact and Prefix paths.
	UseRegex bool `json:"useRegex,omitempty"`
	// AppRoot is app-root: a request for "/" is redirected there with 302.
	AppRoot string `json:"appRoot,omitempty"`
	// XForwardedPrefix is sent upstream as the X-Forwarded-Prefix header.
	XForwardedPrefix string `json:"xForwardedPrefix,omitempty"`
}

var (
	// RewriteTargetPattern is a path and query whose only "$" are capture
	// references $1…$9: "$" followed by a name would read an NGINX
	// variable, "$0" is not a capture and "${" is refused outright.
	RewriteTargetPattern = regexp.MustCompile(`^/?(?:[A-Za-z0-9._~!&()*+,=:@%/?-]|\$[1-9])*$`)
	// URIPathPattern is a path without quotes, backslashes, "$", ";",
	// braces, spaces or "?" (app-root, x-forwarded-prefix).
	URIPathPattern = regexp.MustCompile(`^/[A-Za-z0-9._~!&()*+,=:@%/-]*$`)
)

// MaxRewriteValue is the longest rewrite-target, app-root or
// x-forwarded-prefix accepted, in bytes.
const MaxRewriteValue = 1024

func (r *Rewrite) validate() error {
	if r == nil {
		return nil
	}
	if len(r.Target) > MaxRewriteValue || len(r.AppRoot) > MaxRewriteValue || len(r.XForwardedPrefix) > MaxRewriteValue {
		return fmt.Errorf("a value is over %d bytes", MaxRewriteValue)
	}
	if r.Target != "" && !RewriteTargetPattern.MatchString(r.Target) {
		return fmt.Errorf("target holds a character that is not allowed (only $1-$9 may use $; no quotes, backslashes, ;, braces or spaces)")
	}
	if r.AppRoot != "" && (!URIPathPattern.MatchString(r.AppRoot) || r.AppRoot == "/") {
		return fmt.Errorf("appRoot is not a path other than / without quotes, backslashes, $, ;, braces, ? or spaces")
	}
	if r.XForwardedPrefix != "" && !URIPathPattern.MatchString(r.XForwardedPrefix) {
		return fmt.Errorf("xForwardedPrefix is not a path without quotes, backslashes, $, ;, braces, ? or spaces")
	}
	return nil
}

// RegexPathPattern is what a path may hold when it is written as a
// case-insensitive regex location (use-regex, rewrite-target): the
// ImplementationSpecific characters plus "$" as an anchor (before ")",
// "|" or at the end, never before a name) and {n}, {n,} or {n,m}
// repetition. No quote, backslash, ";", space or other brace: the regex is
// written in double quotes, where NGINX does not interpolate "$".
var RegexPathPattern = regexp.MustCompile(`^/(?:[A-Za-z0-9._\-/~()*+?\[\]|^:@!,=%&]|\{[0-9]{1,3}(?:,[0-9]{0,3})?\}|\$[)|])*\$?$`)

// CheckRegexPath checks that path matches RegexPathPattern and is in the
// safe regex grammar (regex_safe.go): PCRE and RE2 read it the same way, so
// an accepted path can never make `nginx -t` fail, and it cannot backtrack
// catastrophically. Go's compiler checks it once more.
func CheckRegexPath(path string) error {
	if len(path) > MaxRegexPathLen || !RegexPathPattern.MatchString(path) {
		return fmt.Errorf("%q is not a regex path: it must start with '/' and match %s", path, RegexPathPattern)
	}
	if err := ParseSafeRegex(path, RegexPath); err != nil {
		return fmt.Errorf("%q is not an accepted regular expression: %w", path, err)
	}
	if _, err := regexp.Compile(`(?i)^` + path); err != nil {
		return fmt.Errorf("%q is not a valid regular expression: %w", path, err)
	}
	return nil
}
