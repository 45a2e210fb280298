package features

import (
	"net/netip"
	"regexp"
	"strings"
	"testing"
)

func TestValidMapMatch(t *testing.T) {
	for _, ok := range []string{"BadBot/1.0", "Mozilla/5.0 (compatible; Evil; +http://x/)", "~*(sqlmap|nikto)", `~^https?://spam\.example/`,
		"~bot$", `~*^curl/\d+`, "a{b}", "x#y;z", "$http_host"} {
		if err := ValidMapMatch(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", `a"b`, `a\b`, `\x`, `~a\\b`, `~a\"b`, `~a\tb`, `~a\nb`, "~(a+)+$", "~", "~*", "~(?i)a",
		"default", "HOSTNAMES", "include", "volatile", "a\nb", "a\x7fb", "é", "~[", "~a{", strings.Repeat("a", MaxMapMatchLen+1)} {
		if err := ValidMapMatch(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestParseMapMatchList(t *testing.T) {
	got, err := ParseMapMatchList(" b ,a,, ~*c,a ")
	if err != nil || strings.Join(got, "|") != "a|b|~*c" {
		t.Errorf("got %q, %v", got, err)
	}
	if _, err := ParseMapMatchList("a,b\"c"); err == nil || !strings.Contains(err.Error(), `"b\"c"`) {
		t.Errorf("a bad item: got %v, want an error naming it", err)
	}
	if _, err := ParseMapMatchList(strings.Repeat("a,", MaxMapMatches) + "b"); err == nil {
		t.Error("too many entries accepted")
	}
}

// FuzzParseMapMatchList: the parser never panics, and every source it
// accepts can be written between double quotes as a map source: printable
// ASCII, no quote, no backslash NGINX's parser would unescape, no map
// keyword, and a regex Go's RE2 compiles.
func FuzzParseMapMatchList(f *testing.F) {
	for _, s := range []string{"BadBot/1.0,~*(sqlmap|nikto)", `~^https?://spam\.example/`, `~a\\b`, `a"b`, "default", "~(a+)+$", " , "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		list, err := ParseMapMatchList(v)
		if err != nil {
			return
		}
		if len(list) > MaxMapMatches {
			t.Fatalf("%d entries accepted", len(list))
		}
		for _, m := range list {
			checkMapSource(t, m)
		}
	})
}

func checkMapSource(t *testing.T, m string) {
	t.Helper()
	if m == "" || strings.ContainsAny(m, "\"\r\n\t\x00,") || strings.Contains(m, `\\`) {
		t.Fatalf("%q accepted", m)
	}
	for i := 0; i < len(m); i++ {
		if m[i] < 0x20 || m[i] > 0x7e {
			t.Fatalf("%q accepted", m)
		}
	}
	re, isRegex := strings.CutPrefix(m, "~")
	if !isRegex {
		if strings.Contains(m, `\`) || m == "default" || m == "include" {
			t.Fatalf("exact %q accepted", m)
		}
		return
	}
	re = strings.TrimPrefix(re, "*")
	if _, err := regexp.Compile(re); err != nil {
		t.Fatalf("%q accepted, Go refuses it: %v", m, err)
	}
}

// FuzzParseCIDRList: the parser never panics, and every CIDR it accepts
// is canonical, so it is written into nginx.conf as netip prints it.
func FuzzParseCIDRList(f *testing.F) {
	for _, s := range []string{"10.0.0.0/8, 192.168.1.7", "2001:db8::/32,::1", "10.1.2.3/8", "fe80::1%eth0", "10.0.0.0/8;deny all", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		cidrs, _, err := ParseCIDRList(v)
		if err != nil {
			return
		}
		if len(cidrs) > MaxAllowlist {
			t.Fatalf("%d entries accepted", len(cidrs))
		}
		for _, c := range cidrs {
			p, err := netip.ParsePrefix(c)
			if err != nil || p.Masked().String() != c {
				t.Fatalf("%q accepted from %q", c, v)
			}
		}
	})
}
