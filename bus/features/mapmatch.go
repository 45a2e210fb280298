package features

import (
	"fmt"
	"slices"
	"strings"
)

// The ConfigMap's block-user-agents and block-referers are lists of NGINX
// map sources matched against a request header: an exact string, or a
// regex after "~" (case-sensitive) or "~*" (case-insensitive), as
// ingress-nginx writes them into a map on $http_user_agent or
// $http_referer. Each is written double-quoted as a map source, so what is
// accepted here must read the same once NGINX's parser has unquoted it.
// NGINX compares an exact string with the whole header, ignoring case; a
// regex matches anywhere in it unless anchored.

// Limits of a block list: every entry is a map source NGINX tests on each
// request, and every regex one PCRE run.
const (
	// MaxMapMatches is how many entries a list may hold.
	MaxMapMatches = 256
	// MaxMapMatchLen bounds an exact string (a regex: MaxRegexHeaderLen).
	MaxMapMatchLen = 512
)

// mapReservedWords are the map block's own parameters: a source spelled
// like one of them would be read as the parameter.
var mapReservedWords = []string{"default", "hostnames", "include", "volatile"}

// ParseMapMatchList reads a comma-separated list of map sources into a
// sorted, unique list. Empty items are skipped; any bad item refuses the
// whole list, since dropping it would let the client it names in.
func ParseMapMatchList(v string) ([]string, error) {
	if len(v) > MaxMapMatches*(MaxMapMatchLen+1) {
		return nil, fmt.Errorf("the list is %d bytes long, too long for %d entries", len(v), MaxMapMatches)
	}
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		if err := ValidMapMatch(item); err != nil {
			return nil, fmt.Errorf("%q: %w", clip(item), err)
		}
		out = append(out, item)
	}
	if len(out) > MaxMapMatches {
		return nil, fmt.Errorf("%d entries, at most %d are allowed", len(out), MaxMapMatches)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// ValidMapMatch checks one map source: "~regex", "~*regex" or an exact
// string. A regex must be in the safe grammar of header patterns
// (ParseSafeRegex), which NGINX's PCRE and Go read alike and which cannot
// backtrack catastrophically; an exact string is printable ASCII.
// Neither may hold a double quote or a backslash NGINX's parser would
// unescape ("\\", "\t", …), so the quoted source means what was checked.
func ValidMapMatch(s string) error {
	if re, ok := strings.CutPrefix(s, "~"); ok {
		re = strings.TrimPrefix(re, "*")
		if strings.Contains(re, `\\`) {
			return fmt.Errorf(`an escaped backslash ("\\") is not allowed`)
		}
		if err := ParseSafeRegex(re, RegexHeader); err != nil {
			return fmt.Errorf("not an accepted regex: %w", err)
		}
		return checkMapText(re)
	}
	if len(s) == 0 || len(s) > MaxMapMatchLen {
		return fmt.Errorf("an exact string must be 1 to %d characters long", MaxMapMatchLen)
	}
	if strings.HasPrefix(s, `\`) || slices.Contains(mapReservedWords, strings.ToLower(s)) {
		return fmt.Errorf("an exact string may not start with a backslash or be one of %s", strings.Join(mapReservedWords, ", "))
	}
	if strings.ContainsAny(s, `"\`) {
		return fmt.Errorf("a double quote or a backslash is only allowed in a regex (\"~...\"), escaped")
	}
	return checkMapText(s)
}

// checkMapText allows printable ASCII but the double quote: the source is
// written between double quotes, and a line break would end the line.
func checkMapText(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' {
			return fmt.Errorf("%s is not allowed", describeByte(c))
		}
	}
	return nil
}
