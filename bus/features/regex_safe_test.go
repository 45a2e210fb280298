package features

import (
	"regexp"
	"strings"
	"testing"
)

func TestParseSafeRegex(t *testing.T) {
	for _, tc := range []struct {
		p       string
		d       RegexDialect
		wantErr string // "" means accepted
	}{
		// ingress-nginx's documented and common real-world paths.
		{"/", RegexPath, ""},
		{"/something(/|$)(.*)", RegexPath, ""},
		{"/api/v[0-9]+/.*", RegexPath, ""},
		{"/v[0-9]{1,2}/api", RegexPath, ""},
		{"/a{2,}$", RegexPath, ""},
		{"/(foo|bar)$", RegexPath, ""},
		{"/x.*", RegexPath, ""},
		{"/(.+)/(.+)/(.*)", RegexPath, ""},
		{"/(?:api|app)/([^/]+)", RegexPath, ""},
		{"/[a-f0-9]{32}", RegexPath, ""},
		{"/(api/)?v[0-9]+", RegexPath, ""},
		{"/.well-known/acme-challenge/.*", RegexPath, ""},
		{"/[-a-z_]+", RegexPath, ""},
		{"/[a-z-]+", RegexPath, ""},
		{"/(a|b)+", RegexPath, ""},
		{"/.*?x", RegexPath, ""},
		// What PCRE refuses and RE2 takes (issue 10, finding 1).
		{"/[[:alpha:]-z]", RegexPath, "character class"},
		{"/^*", RegexPath, "not allowed"},
		{"/[::]", RegexPath, "POSIX"},
		{"/[.a]", RegexPath, "POSIX"},
		{"/[a[]", RegexPath, "character class"},
		{"/[]a]", RegexPath, "empty"},
		{"/[^]a]", RegexPath, "empty"},
		{"/[z-a]", RegexPath, "range"},
		{"/[A-z]", RegexPath, "range"},
		{"/[a-z-0]", RegexPath, "'-'"},
		{"/a**", RegexPath, "quantifier"},
		{"/a*+", RegexPath, "quantifier"},
		{"/a{1,2}{3}", RegexPath, "quantifier"},
		{"/(?i)a", RegexPath, "groups"},
		{"/(?=a)", RegexPath, "groups"},
		{"/(?<n>a)", RegexPath, "groups"},
		{"/(a", RegexPath, "missing ')'"},
		{"/a)", RegexPath, "unbalanced"},
		{"/[a", RegexPath, "missing ']'"},
		{"/a{3,1}", RegexPath, "below"},
		{"/({1})", RegexPath, "'{'"},
		{"/a{,3}", RegexPath, "'{'"},
		{"/a$b", RegexPath, "'$'"},
		{"/a\\d", RegexPath, "not allowed"},
		{"/(+)", RegexPath, "nothing to repeat"},
		{"/($)*", RegexPath, "repeats"},
		// Catastrophic backtracking (finding 5).
		{"/(a+)+$", RegexPath, "repeats"},
		{"/(a*)*", RegexPath, "repeats"},
		{"/(.*)*", RegexPath, "repeats"},
		{"/(a?)+", RegexPath, "repeats"},
		{"/(a|ab)+", RegexPath, "overlapping"},
		{"/(a|a)*", RegexPath, "overlapping"},
		{"/(x|)*", RegexPath, "overlapping"},
		{"/(a+){2}", RegexPath, "repeats"},
		{"/(a|aa){2,9}", RegexPath, "overlapping"},
		{"/.*.*.*.*", RegexPath, "unbounded"},
		{"/.*.*.*", RegexPath, ""},
		{"/.*.*.*b$", RegexPath, "followed by"},
		{"/.*a.*b.*c", RegexPath, "followed by"},
		{"/(.*)(.*)(.*)x", RegexPath, "followed by"},
		{"/(x.*)(y.*)z", RegexPath, ""},
		{"/(.*x)(.*y)(.*z)", RegexPath, "followed by"},
		{"/.*.*b", RegexPath, ""},
		{"/(.*)(.*)[a-z]{0,3}b$", RegexPath, "optional"},
		{"/(.*)(.*)(a|a)b$", RegexPath, "optional"},
		{"/.*a[a-z]{0,31}[a-z]{0,31}b$", RegexPath, ""},
		{"/.*a.*b[a-z]{0,9}c", RegexPath, "optional"},
		{"/[^/]+/[^/]+/[^/]+/[^/]+/.*", RegexPath, ""},
		{"/a+b+c+d+e+f+g+", RegexPath, "more than 6"},
		{"/a{0,1000}", RegexPath, "over 100"},
		{"/a?a?a?a?a?a?a?a?a?a?a?aaaaaaaaaaa", RegexPath, "optional"},
		{"/[a-z]{1,100}[a-z]{1,100}", RegexPath, "optional"},
		{"/" + strings.Repeat("(abcd){100}", 12), RegexPath, "too large"},
		{"/" + strings.Repeat("a", MaxRegexPathLen), RegexPath, "long"},
		// Header patterns (canary-by-header-pattern).
		{`^v\d{1,3}$`, RegexHeader, ""},
		{`^(beta|gamma)-[0-9]+$`, RegexHeader, ""},
		{`^[\w.-]+@example\.com$`, RegexHeader, ""},
		{`a^b`, RegexHeader, "'^'"},
		{`\1`, RegexHeader, "escaped punctuation"},
		{`\Qa\E`, RegexHeader, "escaped punctuation"},
		{`\x41`, RegexHeader, "escaped punctuation"},
		{`a\`, RegexHeader, "trailing backslash"},
		{`(\d+)+x`, RegexHeader, "repeats"},
		{`.*x`, RegexHeader, ""},
		{`.*x.*y`, RegexHeader, "followed by"},
		{`^.*x.*y`, RegexHeader, ""},
		{`{`, RegexHeader, "'{'"},
	} {
		err := ParseSafeRegex(tc.p, tc.d)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q refused: %v", tc.p, err)
		case tc.wantErr != "" && err == nil:
			t.Errorf("%q accepted", tc.p)
		case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("%q: error %q does not mention %q", tc.p, err, tc.wantErr)
		}
		if err == nil {
			flags := "(?i)"
			if tc.d == RegexHeader {
				flags = ""
			}
			if _, cerr := regexp.Compile(flags + tc.p); cerr != nil {
				t.Errorf("%q accepted but Go refuses it: %v", tc.p, cerr)
			}
		}
	}
}

// unsafePath: a backslash, ";" or space, "$" before anything but ")" or
// "|", or "^" anywhere but right after "[".
var unsafePath = regexp.MustCompile(`[\\; ]|\$[^)|]|[^\[]\^`)

// FuzzParseSafeRegex: the parser never panics, and what it accepts Go's
// RE2 compiles, holds nothing that ends a quoted string and, for paths,
// names no NGINX variable.
func FuzzParseSafeRegex(f *testing.F) {
	for _, s := range []string{"/something(/|$)(.*)", "/[[:alpha:]-z]", "/^*", "/[::]", "/(a+)+", `^v\d{1,3}$`, "/a{1,3}", "/(a|b)*", "/[^/]+"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, p string, header bool) {
		d, flags := RegexPath, "(?i)^"
		if header {
			d, flags = RegexHeader, ""
		}
		if ParseSafeRegex(p, d) != nil {
			return
		}
		if _, err := regexp.Compile(flags + p); err != nil {
			t.Fatalf("%q accepted, Go refuses it: %v", p, err)
		}
		if strings.ContainsAny(p, "\"'\r\n\t\x00") {
			t.Fatalf("%q accepted", p)
		}
		if !header && unsafePath.MatchString(p) {
			t.Fatalf("path %q accepted", p)
		}
	})
}
