package renderer

import (
	"fmt"
	"net/netip"

	"switchyard.dev/switchyard/bus"
)

// accessLines are a location's allow and deny directives (access plugin),
// without ";": deny rules first, then allow rules and "deny all" when an
// allowlist is set, as ingress-nginx writes them; then "satisfy any" when
// asked (all is NGINX's default). Each address is parsed
// again and written as netip prints it, never as the annotation had it.
func accessLines(f *bus.Features) ([]string, error) {
	if f == nil || f.Access == nil {
		return nil, nil
	}
	var lines []string
	for _, rule := range []struct {
		verb  string
		cidrs []string
	}{{"deny", f.Access.Deny}, {"allow", f.Access.Allow}} {
		for _, c := range rule.cidrs {
			p, err := netip.ParsePrefix(c)
			if err != nil || p.Masked() != p {
				return nil, fmt.Errorf("access: %q is not a canonical CIDR", c)
			}
			lines = append(lines, rule.verb+" "+p.String())
		}
	}
	if len(f.Access.Allow) > 0 {
		lines = append(lines, "deny all")
	}
	if f.Access.SatisfyAny {
		lines = append(lines, "satisfy any")
	}
	return lines, nil
}
