package features

import (
	"regexp"
	"strings"
	"testing"
)

// sizePattern is the whole-string pattern splitSize spells out.
var sizePattern = regexp.MustCompile(`^([0-9]{1,13})([kKmMgG]?)$`)

// upstreamVhostPattern is the one ValidUpstreamVhost spells out.
var upstreamVhostPattern = regexp.MustCompile(`^[A-Za-z0-9_]([A-Za-z0-9._~-]{0,252})(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?$`)

func TestSplitSize(t *testing.T) {
	for _, tc := range []struct{ in, digits, unit string }{
		{"0", "0", ""}, {"64m", "64", "m"}, {"16K", "16", "K"}, {"1024g", "1024", "g"}, {"1234567890123", "1234567890123", ""},
	} {
		if d, u, ok := splitSize(tc.in); !ok || d != tc.digits || u != tc.unit {
			t.Errorf("splitSize(%q) = %q, %q, %v; want %q, %q", tc.in, d, u, ok, tc.digits, tc.unit)
		}
	}
	for _, bad := range []string{"", "k", "m", "12kk", "1.5m", " 1m", "1m ", "-1", "+1", "12345678901234", "1t", "1mb", "٣"} {
		if d, u, ok := splitSize(bad); ok {
			t.Errorf("splitSize(%q) = %q, %q: accepted", bad, d, u)
		}
	}
}

// FuzzSplitSize holds splitSize equal to the whole-string pattern it
// replaces.
func FuzzSplitSize(f *testing.F) {
	for _, seed := range []string{"64m", "0", "k", "12kk", "1234567890123g", "12345678901234", "1 m", "9G"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		digits, unit, ok := splitSize(v)
		m := sizePattern.FindStringSubmatch(v)
		if ok != (m != nil) || (ok && (digits != m[1] || unit != m[2])) {
			t.Fatalf("splitSize(%q) = %q, %q, %v; the pattern says %q", v, digits, unit, ok, m)
		}
	})
}

func TestValidUpstreamVhost(t *testing.T) {
	for _, ok := range []string{"internal.example.com", "a", "_x", "svc.ns.svc.cluster.local:8080", "[::1]", "[fe80::1]:443",
		"10.0.0.1:80", "x~y-z", strings.Repeat("a", 253)} {
		if !ValidUpstreamVhost(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", ":80", "-a", ".a", "a:", "a:123456", "a:8a", "a:80:80", "[::1", "[:]", "[::1]80", "[::1]:",
		"[g::1]", "a b", "$host", `a"b`, "a/b", strings.Repeat("a", 254), "[" + strings.Repeat("1", 46) + "]"} {
		if ValidUpstreamVhost(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzValidUpstreamVhost holds ValidUpstreamVhost equal to the pattern it
// replaces.
func FuzzValidUpstreamVhost(f *testing.F) {
	for _, seed := range []string{"internal.example.com", "[::1]:443", "a:80:80", "[::1]]", "_", "[1]", "a:"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, v string) {
		if got, want := ValidUpstreamVhost(v), upstreamVhostPattern.MatchString(v); got != want {
			t.Fatalf("ValidUpstreamVhost(%q) = %v; the pattern says %v", v, got, want)
		}
	})
}
