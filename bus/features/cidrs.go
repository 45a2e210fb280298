package features

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// ParseCIDRList reads a comma-separated list of addresses and CIDRs into
// canonical, sorted, unique CIDRs. A bare address is one host (/32 or
// /128). Host bits set in a CIDR ("192.168.11.20/24") are cleared, as
// ingress-nginx's net.ParseCIDR does, and reported in notes so the author
// sees what is really allowed.
func ParseCIDRList(v string) (cidrs, notes []string, err error) {
	if len(v) > 64*MaxAllowlist {
		return nil, nil, fmt.Errorf("the list is %d bytes long, too long for %d entries", len(v), MaxAllowlist)
	}
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, _, ok := ParseAddrOrCIDR(item)
		if !ok {
			return nil, nil, fmt.Errorf("%q is not an IP address or CIDR", clip(item))
		}
		if p.Masked() != p {
			notes = append(notes, fmt.Sprintf("%q has host bits set; it allows all of %s", clip(item), p.Masked()))
			p = p.Masked()
		}
		out = append(out, p.String())
	}
	if len(out) > MaxAllowlist {
		return nil, nil, fmt.Errorf("%d entries, at most %d are allowed", len(out), MaxAllowlist)
	}
	slices.Sort(out)
	return slices.Compact(out), notes, nil
}

// ParseAddrOrCIDR reads one IP address (bare true: a prefix of one host,
// /32 or /128) or CIDR, as given: host bits are not cleared. An address
// with a zone is refused: a prefix would drop the zone and mean another
// host.
func ParseAddrOrCIDR(item string) (p netip.Prefix, bare, ok bool) {
	if strings.Contains(item, "/") {
		p, err := netip.ParsePrefix(item)
		return p, false, err == nil
	}
	a, err := netip.ParseAddr(item)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, true, false
	}
	return netip.PrefixFrom(a, a.BitLen()), true, true
}

// validCIDRs checks a list is canonical CIDRs, as ParseCIDRList gives them.
func validCIDRs(name string, cidrs []string) error {
	if len(cidrs) > MaxAllowlist {
		return fmt.Errorf("%s has %d CIDRs, at most %d are allowed", name, len(cidrs), MaxAllowlist)
	}
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if !cidrPattern.MatchString(c) || err != nil || p.Masked().String() != c {
			return fmt.Errorf("%s: %q is not a canonical CIDR", name, c)
		}
	}
	return nil
}
