package lua_test

import (
	"bytes"
	"encoding/json"
	"maps"
	"math/rand/v2"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Tests of the source ranges of Lua-routed hosts (util/cidr.lua and
// router.lua's compile_access and access_denied), run by TestDataPlane.

// accessSet is a location's allow and deny lines, as the renderer writes
// them (stages/renderer/access.go); dataplane_test.go writes each as the
// directives of /access-nginx/<Name>.
type accessSet struct {
	Name  string
	Lines []string
}

var accessSets = []accessSet{
	// block-cidrs, a denylist, an allowlist of both families, deny all.
	{"ingress", []string{"deny 192.0.2.0/24", "deny 10.1.2.3/32", "allow 10.0.0.0/8", "allow 2001:db8::/32", "deny all"}},
	// Only IPv6 rules: an IPv4-mapped client is checked against them.
	{"deny-only-v6", []string{"deny 2001:db8:0:1::/64", "deny ::ffff:10.0.0.0/104"}},
	// With an IPv4 rule, an IPv4-mapped client is checked as IPv4 only.
	{"mapped-with-v4", []string{"deny ::ffff:11.0.0.0/104", "allow 11.0.0.0/8", "allow ::ffff:10.0.0.0/104", "deny all"}},
	// Odd prefix lengths, /127, /128, and /0 of each family.
	{"odd", []string{"allow 10.0.0.128/25", "allow 172.16.0.0/12", "allow 2001:db8:8000::/33", "allow 2001:db8::2/127",
		"allow ::1/128", "deny 0.0.0.0/0", "deny ::/0"}},
	// NGINX refuses 255.255.255.255 (its parser's error value), in
	// allow and deny and as a realip address alike.
	{"edges", []string{"allow 255.255.255.254/32", "allow ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128", "allow 0.0.0.0/32", "deny all"}},
	{"all-v4", []string{"allow 0.0.0.0/0", "deny all"}},
	// failClosed's line.
	{"fail-closed", []string{"deny all"}},
	{"satisfy-any", []string{"deny 10.1.2.3/32", "satisfy any"}},
}

// accessClients are the client addresses every set is asked about; ""
// sends no X-Test-Addr (the peer, 127.0.0.1).
var accessClients = []string{"",
	"10.1.2.3", "10.1.2.4", "10.255.255.255", "11.0.0.0", "11.255.0.1", "192.0.2.1", "192.0.3.1", "0.0.0.0",
	"255.255.255.254", "255.255.255.253", "172.16.5.4", "172.31.255.255", "172.32.0.1", "10.0.0.127", "10.0.0.128", "10.0.0.255",
	"2001:db8::1", "2001:db8:0:1::5", "2001:db8:0:2::5", "2001:db9::", "2001:db7:ffff::1", "::1", "::", "::2",
	"2001:db8::2", "2001:db8::3", "2001:db8::4", "2001:db8:8000::1", "2001:db8:7fff::1", "2001:db8:ffff:ffff::",
	"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe", "fe80::1",
	"::ffff:10.1.2.3", "::ffff:10.1.2.4", "::ffff:192.0.2.1", "::ffff:11.0.0.1", "::ffff:0.0.0.0", "::ffff:255.255.255.254",
}

// accessGet is the status and body of GET path from client (as
// X-Test-Addr; "" for the peer's own address) with headers.
func (dp *dataPlane) accessGet(t *testing.T, path, client string, hdr map[string]string) (int, string) {
	t.Helper()
	if client != "" {
		hdr = maps.Clone(hdr)
		if hdr == nil {
			hdr = map[string]string{}
		}
		hdr["X-Test-Addr"] = client
	}
	r, _ := dp.getWith(t, path, "", hdr)
	return r.status, r.body
}

// Every set answers every client through router.lua as NGINX's own allow
// and deny directives do; a few answers are also spelled out.
func (dp *dataPlane) testAccessAgreesWithNginx(t *testing.T) {
	got := map[string]int{}
	for _, set := range accessSets {
		lines, _ := json.Marshal(set.Lines)
		for _, client := range accessClients {
			want, body := dp.accessGet(t, "/access-nginx/"+set.Name, client, nil)
			status, luaBody := dp.accessGet(t, "/access-lua", client, map[string]string{"X-Test-Lines": string(lines)})
			if status != want {
				t.Errorf("%s from %q: router.lua %d (%q), NGINX %d (%q)", set.Name, client, status, luaBody, want, body)
			}
			if want == 200 && client != "" && body != "in "+client {
				t.Errorf("%s from %q: NGINX saw %q", set.Name, client, body)
			}
			got[set.Name+" "+client] = want
		}
	}
	for key, want := range map[string]int{
		"ingress 10.1.2.4": 200, "ingress 10.1.2.3": 403, "ingress 192.0.2.1": 403, "ingress 11.0.0.0": 403,
		"ingress 2001:db8::1": 200, "ingress 2001:db9::": 403, "ingress ::ffff:10.1.2.4": 200, "ingress ::ffff:10.1.2.3": 403,
		"ingress ": 403, "deny-only-v6 ::ffff:10.1.2.3": 403, "deny-only-v6 10.1.2.3": 200, "deny-only-v6 2001:db8:0:1::5": 403,
		"mapped-with-v4 ::ffff:10.1.2.3": 403, "mapped-with-v4 ::ffff:11.0.0.1": 200, "odd 10.0.0.127": 403,
		"odd 10.0.0.128": 200, "odd 2001:db8::4": 403, "odd 2001:db8::3": 200, "odd 2001:db8:7fff::1": 403,
		"odd 2001:db8:8000::1": 200, "odd ::1": 200, "odd ::2": 403, "edges 255.255.255.253": 403, "edges 255.255.255.254": 200, "edges 0.0.0.0": 200,
		"all-v4 2001:db8::1": 403, "all-v4 ::ffff:10.1.2.3": 200, "fail-closed ": 403, "satisfy-any 10.1.2.3": 403,
		"satisfy-any 10.1.2.4": 200,
	} {
		if got[key] != want {
			t.Errorf("%s: NGINX answered %d, want %d", key, got[key], want)
		}
	}
	// Malformed lines are refused when compiled, never decided on.
	for _, lines := range [][]string{{"allow 10.0.0.1/8"}, {"permit 10.0.0.0/8"}, {"deny unix:"}, {"deny 10.0.0.0/8 "},
		{"allow 2001:db8::/129"}, {"allow all", "satisfy all"}} {
		data, _ := json.Marshal(lines)
		if status, body := dp.accessGet(t, "/access-lua", "10.0.0.1", map[string]string{"X-Test-Lines": string(data)}); status != 400 {
			t.Errorf("%q compiled: %d %q", lines, status, body)
		}
	}
}

// The CIDR matcher: what parses, and which addresses each CIDR holds.
func (dp *dataPlane) testCIDRMatch(t *testing.T) {
	for _, c := range []struct{ cidr, addr, want string }{
		{"10.0.0.0/8", "10.255.255.255", "true"},
		{"10.0.0.0/8", "11.0.0.0", "false"},
		{"10.0.0.0/8", "9.255.255.255", "false"},
		{"0.0.0.0/0", "255.255.255.255", "true"},
		{"0.0.0.0/0", "::", "false"}, // never across families
		{"::/0", "1.2.3.4", "false"},
		{"::/0", "ffff::1", "true"},
		{"1.2.3.4/32", "1.2.3.4", "true"},
		{"1.2.3.4/32", "1.2.3.5", "false"},
		{"1.2.3.4", "1.2.3.4", "true"}, // an address alone is /32
		{"10.0.0.128/25", "10.0.0.128", "true"},
		{"10.0.0.128/25", "10.0.0.127", "false"},
		{"172.16.0.0/12", "172.31.255.255", "true"},
		{"172.16.0.0/12", "172.32.0.0", "false"},
		{"192.168.1.0/31", "192.168.1.1", "true"},
		{"192.168.1.0/31", "192.168.1.2", "false"},
		{"2001:db8::/32", "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "true"},
		{"2001:db8::/32", "2001:db9::", "false"},
		{"2001:db8::2/127", "2001:db8::3", "true"},
		{"2001:db8::2/127", "2001:db8::4", "false"},
		{"2001:db8::2/127", "2001:db8::1", "false"},
		{"2001:db8::1/128", "2001:db8::1", "true"},
		{"2001:db8::1/128", "2001:db8::", "false"},
		{"2001:db8::1", "2001:db8:0:0:0:0:0:1", "true"}, // an address alone is /128
		{"2001:db8:8000::/33", "2001:db8:8000::", "true"},
		{"2001:db8:8000::/33", "2001:db8:7fff:ffff::", "false"},
		{"2001:db8::/65", "2001:db8::7fff:ffff:ffff:ffff", "true"},
		{"2001:db8::/65", "2001:db8::8000:0:0:0", "false"},
		{"::ffff:10.0.0.0/104", "::ffff:10.9.8.7", "true"},
		{"::ffff:10.0.0.0/104", "::ffff:11.0.0.0", "false"},
		{"::ffff:10.0.0.0/104", "10.9.8.7", "false"}, // router.lua unmaps, not the matcher
		{"::ffff:0:0/96", "::ffff:1.2.3.4", "true"},
		{"1::/16", "1:0:0:0:0:0:0:0", "true"},
		{"::1.2.3.4/128", "::102:304", "true"},
		{"fe80::/10", "febf:ffff::", "true"},
		{"fe80::/10", "fec0::", "false"},
		{"a:b:c:d:e:f:1:2/128", "A:B:C:D:E:F:1:2", "true"},
		{"1:2:3:4:5:6::/112", "1:2:3:4:5:6:0:ffff", "true"},
		{"1:2:3:4:5:6:7::/128", "1:2:3:4:5:6:7:0", "true"}, // "::" for one group
		{"::2:3:4:5:6:7:8/128", "0:2:3:4:5:6:7:8", "true"},
		// What does not parse.
		{"10.0.0.1/8", "10.0.0.1", "bad cidr: bits past the prefix are set"},
		{"10.0.0.128/24", "10.0.0.1", "bad cidr: bits past the prefix are set"},
		{"2001:db8::1/127", "2001:db8::1", "bad cidr: bits past the prefix are set"},
		{"2001:db9::/31", "2001:db8::", "bad cidr: bits past the prefix are set"},
		{"2001:db8::/31", "2001:db9::", "true"},
		{"10.0.0.0/33", "10.0.0.1", "bad cidr: the prefix length is not 0 to 32"},
		{"::/129", "::", "bad cidr: the prefix length is not 0 to 128"},
		{"10.0.0.0/08", "10.0.0.1", "bad cidr: the prefix length is not 0 to 32"},
		{"10.0.0.0/", "10.0.0.1", "bad cidr: not an IPv4 or IPv6 address"},
		{"10.0.0/8", "10.0.0.1", "bad cidr: not an IPv4 or IPv6 address"},
		{"010.0.0.0/8", "10.0.0.1", "bad cidr: not an IPv4 or IPv6 address"},
		{"256.0.0.0/8", "10.0.0.1", "bad cidr: not an IPv4 or IPv6 address"},
		{"1.2.3.4.5/32", "10.0.0.1", "bad cidr: not an IPv4 or IPv6 address"},
		{"1:2:3:4:5:6:7:8:9/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"1:2:3:4:5:6:7/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"1:2:3:4:5:6:7:8::/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"1:2:3:4::5:6:7:8/128", "::", "bad cidr: not an IPv4 or IPv6 address"}, // "::" for no group
		{"1::2::3/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{":::/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{":1::/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"1::2:/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"12345::/16", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"fe80::1%eth0/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"::ffff:1.2.3/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"1.2.3.4::/128", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"all", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"", "::", "bad cidr: not an IPv4 or IPv6 address"},
		{"10.0.0.0/8", "unix:", "bad addr"},
		{"10.0.0.0/8", " 10.0.0.1", "bad addr"},
	} {
		q := url.Values{"cidr": {c.cidr}, "addr": {c.addr}}
		status, body := dp.accessGet(t, "/cidr-unit?"+q.Encode(), "", nil)
		if status != 200 || body != c.want {
			t.Errorf("%q holds %q: %d %q, want %q", c.cidr, c.addr, status, body, c.want)
		}
	}
	if strings.Contains(dp.errorLog(), "cidr.lua") {
		t.Errorf("the matcher raised an error:\n%s", dp.errorLog())
	}
}

// cidrCases are n random CIDR and address pairs: well-formed ones of both
// families, every prefix length, addresses near and inside them, and
// mutations of them (a character changed, inserted or dropped).
func cidrCases(rng *rand.Rand, n int) [][2]string {
	randomAddr := func() netip.Addr {
		var b [16]byte
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		switch rng.IntN(4) {
		case 0:
			return netip.AddrFrom4([4]byte(b[:4]))
		case 1: // IPv4-mapped
			copy(b[:12], []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff})
		case 2: // runs of zeros, for "::"
			for i := rng.IntN(16); i < 16 && rng.IntN(5) > 0; i++ {
				b[i] = 0
			}
		}
		return netip.AddrFrom16(b)
	}
	const alphabet = "0123456789abcdefABCDEF:./%x "
	mutate := func(s string) string {
		i := rng.IntN(len(s) + 1)
		c := string(alphabet[rng.IntN(len(alphabet))])
		switch rng.IntN(3) {
		case 0:
			return s[:i] + c + s[i:]
		case 1:
			if i < len(s) {
				return s[:i] + c + s[i+1:]
			}
		}
		if i < len(s) {
			return s[:i] + s[i+1:]
		}
		return s
	}
	cases := make([][2]string, 0, n)
	for len(cases) < n {
		a := randomAddr()
		p := netip.PrefixFrom(a, rng.IntN(a.BitLen()+1)).Masked()
		addr := randomAddr()
		if rng.IntN(2) == 0 { // inside, or just outside, the prefix
			addr = p.Addr()
			for range rng.IntN(3) {
				addr = addr.Prev()
			}
			for range rng.IntN(3) {
				addr = addr.Next()
			}
		}
		c, as := p.String(), addr.String()
		if !addr.IsValid() {
			as = a.String()
		}
		switch rng.IntN(4) {
		case 0:
			c = mutate(c)
		case 1:
			as = mutate(as)
		}
		cases = append(cases, [2]string{c, as})
	}
	return cases
}

// netipAnswer is what util/cidr.lua must answer for a pair, by Go's netip:
// a CIDR as netip.ParsePrefix takes it, with no bits past the prefix (or
// an address alone, all bits), and an address without a zone.
func netipAnswer(c, a string) string {
	p, err := netip.ParsePrefix(c)
	if err != nil {
		addr, addrErr := netip.ParseAddr(c)
		if addrErr != nil || addr.Zone() != "" {
			return "bad cidr"
		}
		p = netip.PrefixFrom(addr, addr.BitLen())
	} else if p.Masked() != p {
		return "bad cidr"
	}
	addr, err := netip.ParseAddr(a)
	if err != nil || addr.Zone() != "" {
		return "bad addr"
	}
	return strconv.FormatBool(p.Contains(addr))
}

// cidrDiffEnv sets how many random pairs testCIDRAgreesWithNetip checks
// (make fuzz: CIDR_DIFF_N); 5,000 otherwise.
const cidrDiffEnv = "SWITCHYARD_CIDR_DIFF_N"

// util/cidr.lua parses and matches thousands of random and mutated pairs
// as Go's netip does (which the renderer uses to check and print them).
func (dp *dataPlane) testCIDRAgreesWithNetip(t *testing.T) {
	n := 5000
	if v, err := strconv.Atoi(os.Getenv(cidrDiffEnv)); err == nil && v > 0 {
		n = v
	}
	seed := rand.Uint64()
	t.Logf("seed %d, %d pairs (%s)", seed, n, cidrDiffEnv)
	cases := cidrCases(rand.New(rand.NewPCG(seed, 14)), n)
	var got []string
	for batch := range slices.Chunk(cases, 10000) {
		got = append(got, dp.cidrBatch(t, batch)...)
	}
	counts := map[string]int{}
	for i, c := range cases {
		want := netipAnswer(c[0], c[1])
		counts[want]++
		if got[i] != want {
			t.Errorf("%q holds %q: cidr.lua %q, netip %q", c[0], c[1], got[i], want)
		}
	}
	t.Logf("answers of %d cases: %v", len(cases), counts)
	// The cases must reach every answer often, or they prove little.
	for _, answer := range []string{"true", "false", "bad cidr", "bad addr"} {
		if counts[answer] < len(cases)/20 {
			t.Errorf("only %d of %d cases answer %q: %v", counts[answer], len(cases), answer, counts)
		}
	}
}

// cidrBatch is /cidr-batch's answers for cases.
func (dp *dataPlane) cidrBatch(t *testing.T, cases [][2]string) []string {
	t.Helper()
	body, _ := json.Marshal(cases)
	resp, err := dp.proxy.Post("http://"+dp.httpAddr+"/cidr-batch", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got []string
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || len(got) != len(cases) {
		t.Fatalf("cidr-batch: %d, %d answers for %d cases (%v)", resp.StatusCode, len(got), len(cases), err)
	}
	return got
}
