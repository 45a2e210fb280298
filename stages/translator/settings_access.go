package translator

import (
	"fmt"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// accessSettings are the global source ranges and block lists
// (bus.AccessSettings). An invalid value fails closed (failClosed): the
// default, no list, would let in the very clients the key keeps out.
var accessSettings = map[string]settingParser{
	bus.KeyWhitelistSourceRange: cidrListSetting(func(s *bus.Settings) *[]string { return &s.WhitelistSourceRange }),
	bus.KeyDenylistSourceRange:  cidrListSetting(func(s *bus.Settings) *[]string { return &s.DenylistSourceRange }),
	bus.KeyBlockCIDRs:           cidrListSetting(func(s *bus.Settings) *[]string { return &s.BlockCIDRs }),
	bus.KeyBlockUserAgents:      mapMatchSetting(func(s *bus.Settings) *[]string { return &s.BlockUserAgents }),
	bus.KeyBlockReferers:        mapMatchSetting(func(s *bus.Settings) *[]string { return &s.BlockReferers }),
}

func cidrListSetting(field func(*bus.Settings) *[]string) settingParser {
	p := setting(field, fmt.Sprintf("a comma-separated list of at most %d IPv4 or IPv6 addresses and CIDRs such as 10.0.0.0/8, or empty for none", features.MaxAllowlist),
		parseAccessCIDRs, joinWith(","))
	p.failClosed = true
	return p
}

func mapMatchSetting(field func(*bus.Settings) *[]string) settingParser {
	p := setting(field, fmt.Sprintf("a comma-separated list of at most %d exact strings (printable ASCII, no double quote or backslash) and regexes after ~ or ~* (the safe subset of PCRE, at most %d characters), or empty for none", features.MaxMapMatches, features.MaxRegexHeaderLen),
		parseMapMatches, joinWith(","))
	p.failClosed = true
	return p
}

// parseAccessCIDRs is features.ParseCIDRList: host bits set in a CIDR are
// cleared, as NGINX (and so ingress-nginx) does with this list. An empty
// list is none (nil, the default).
func parseAccessCIDRs(v string) ([]string, bool) {
	cidrs, _, err := features.ParseCIDRList(v)
	if err != nil {
		return nil, false
	}
	if len(cidrs) == 0 {
		return nil, true
	}
	return cidrs, true
}

func parseMapMatches(v string) ([]string, bool) {
	matches, err := features.ParseMapMatchList(v)
	if err != nil {
		return nil, false
	}
	if len(matches) == 0 {
		return nil, true
	}
	return matches, true
}
