package renderer

import (
	"fmt"
	"net/netip"
	"slices"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/bus/features"
)

// accessGroup is a run of a location's allow and deny directives (without
// ";") that come from one source.
type accessGroup struct {
	// Source is the attribution comment of a ConfigMap key's lines; ""
	// for the location's own Ingress, whose comment is already in force.
	Source string
	// Comment says what the lines are, written after "# ".
	Comment string
	Lines   []string
}

// accessSettingFields are the access keys written into the server files
// (settingRev, resetSetting). A refused one fails closed rather than
// falling back to its default (effectiveSettings).
var accessSettingFields = map[string]func(*bus.Settings) any{
	bus.KeyWhitelistSourceRange: func(s *bus.Settings) any { return &s.WhitelistSourceRange },
	bus.KeyDenylistSourceRange:  func(s *bus.Settings) any { return &s.DenylistSourceRange },
	bus.KeyBlockCIDRs:           func(s *bus.Settings) any { return &s.BlockCIDRs },
	bus.KeyBlockUserAgents:      func(s *bus.Settings) any { return &s.BlockUserAgents },
	bus.KeyBlockReferers:        func(s *bus.Settings) any { return &s.BlockReferers },
}

func init() { registerSettingFields(accessSettingFields) }

// failClosedSetting sets a refused key back to its default as every
// refused key is, and for an access key, whose default would let in the
// clients it keeps out, also marks it unreadable: its locations deny.
func failClosedSetting(s *bus.Settings, key string) {
	resetSetting(s, key)
	if slices.Contains(bus.AccessKeys, key) {
		s.MarkUnreadable(key)
	}
}

// accessGroups are a location's allow and deny directives, as
// ingress-nginx writes them: block-cidrs first, then the deny rules, then
// the allow rules and "deny all" when an allowlist is set, then "satisfy
// any" when the Ingress asks for it. The Ingress's
// allowlist-source-range replaces the ConfigMap's whitelist-source-range,
// and its denylist-source-range the ConfigMap's denylist-source-range,
// each on its own (ingress-nginx's ipallowlist and ipdenylist parsers).
// A ConfigMap list that cannot be enforced makes the location deny every
// client where it applies. Each address is parsed again and written as
// netip prints it.
func accessGroups(f *bus.Features, a bus.AccessSettings, src sources) ([]accessGroup, error) {
	var own features.Access
	if f != nil && f.Access != nil {
		own = *f.Access
	}
	for _, key := range []string{bus.KeyBlockCIDRs, bus.KeyBlockUserAgents, bus.KeyBlockReferers} {
		if a.Unreadable(key) {
			return failClosed(key), nil
		}
	}
	if len(own.Deny) == 0 && a.Unreadable(bus.KeyDenylistSourceRange) {
		return failClosed(bus.KeyDenylistSourceRange), nil
	}
	if len(own.Allow) == 0 && a.Unreadable(bus.KeyWhitelistSourceRange) {
		return failClosed(bus.KeyWhitelistSourceRange), nil
	}
	var groups []accessGroup
	add := func(key, comment, verb string, cidrs []string, allow bool) error {
		if len(cidrs) == 0 {
			return nil
		}
		lines, err := cidrLines(verb, cidrs)
		if err != nil {
			return err
		}
		if allow {
			lines = append(lines, "deny all")
		}
		g := accessGroup{Comment: comment, Lines: lines}
		if key != "" {
			g.Source, g.Comment = src.configMapSource(key), key+" (ConfigMap)."
		}
		if n := len(groups); n > 0 && g.Source == "" && groups[n-1].Source == "" {
			groups[n-1].Lines = append(groups[n-1].Lines, g.Lines...)
			return nil
		}
		groups = append(groups, g)
		return nil
	}
	const ownComment = "allowlist-source-range, denylist-source-range, satisfy."
	denyKey, deny := "", own.Deny
	if len(deny) == 0 {
		denyKey, deny = bus.KeyDenylistSourceRange, a.DenylistSourceRange
	}
	allowKey, allow := "", own.Allow
	if len(allow) == 0 {
		allowKey, allow = bus.KeyWhitelistSourceRange, a.WhitelistSourceRange
	}
	if err := add(bus.KeyBlockCIDRs, "", "deny", a.BlockCIDRs, false); err != nil {
		return nil, err
	}
	if err := add(denyKey, ownComment, "deny", deny, false); err != nil {
		return nil, err
	}
	if err := add(allowKey, ownComment, "allow", allow, true); err != nil {
		return nil, err
	}
	if own.SatisfyAny {
		// satisfy: any of the location's checks (these, basic or external
		// auth) lets a request through; all is NGINX's default.
		if n := len(groups); n > 0 && groups[n-1].Source == "" {
			groups[n-1].Lines = append(groups[n-1].Lines, satisfyAny)
		} else {
			groups = append(groups, accessGroup{Comment: ownComment, Lines: []string{satisfyAny}})
		}
	}
	return groups, nil
}

// satisfyAny is the line of satisfy: any.
const satisfyAny = "satisfy any"

// failClosed denies every client: key cannot be enforced.
func failClosed(key string) []accessGroup {
	return []accessGroup{{Source: sourceSwitchyard, Lines: []string{"deny all"},
		Comment: "the ConfigMap's " + key + " cannot be enforced (see its Problem): every client is denied."}}
}

// cidrLines are "verb cidr" for each canonical CIDR.
func cidrLines(verb string, cidrs []string) ([]string, error) {
	lines := make([]string, 0, len(cidrs))
	for _, c := range cidrs {
		p, err := netip.ParsePrefix(c)
		if err != nil || p.Masked() != p || p.String() != c {
			return nil, fmt.Errorf("access: %q is not a canonical CIDR", c)
		}
		lines = append(lines, verb+" "+p.String())
	}
	return lines, nil
}

// attributeAccess gives the Ingress's own groups back their source when
// they follow lines from the ConfigMap, and returns the comment that gives
// the lines after the groups back to the Ingress: "" when the last group
// is the Ingress's own (or there is none).
func attributeAccess(groups []accessGroup, locationSource string) string {
	fromConfigMap := false
	for i := range groups {
		switch {
		case groups[i].Source != "":
			fromConfigMap = true
		case fromConfigMap:
			groups[i].Source, fromConfigMap = locationSource, false
		}
	}
	if fromConfigMap {
		return locationSource
	}
	return ""
}

// blockView is one block-user-agents or block-referers check of a server:
// its attribution, the map's variable and the ConfigMap key.
type blockView struct {
	Source, Variable, Key string
}

// serverBlocks are the checks each server makes of the ConfigMap's
// block-user-agents and block-referers maps (nginx.conf).
func serverBlocks(a bus.AccessSettings, src sources) []blockView {
	var out []blockView
	if len(a.BlockUserAgents) > 0 {
		out = append(out, blockView{Source: src.configMapSource(bus.KeyBlockUserAgents), Variable: "$block_ua", Key: bus.KeyBlockUserAgents})
	}
	if len(a.BlockReferers) > 0 {
		out = append(out, blockView{Source: src.configMapSource(bus.KeyBlockReferers), Variable: "$block_ref", Key: bus.KeyBlockReferers})
	}
	return out
}

// blockMapView is an http-level map of a request header to the variable a
// server checks; each source is double-quoted.
type blockMapView struct {
	Source, Header, Variable, Key string
	Sources                       []string
}

// blockMaps are nginx.conf's block-user-agents and block-referers maps.
// Each source is checked again (features.ValidMapMatch) before it is
// written between double quotes.
func blockMaps(a bus.AccessSettings, src sources) ([]blockMapView, error) {
	var out []blockMapView
	for _, m := range []blockMapView{
		{Header: "$http_user_agent", Variable: "$block_ua", Key: bus.KeyBlockUserAgents, Sources: a.BlockUserAgents},
		{Header: "$http_referer", Variable: "$block_ref", Key: bus.KeyBlockReferers, Sources: a.BlockReferers},
	} {
		if len(m.Sources) == 0 {
			continue
		}
		if len(m.Sources) > features.MaxMapMatches {
			return nil, fmt.Errorf("%s: %d entries, at most %d", m.Key, len(m.Sources), features.MaxMapMatches)
		}
		quoted := make([]string, 0, len(m.Sources))
		for _, s := range m.Sources {
			if err := features.ValidMapMatch(s); err != nil {
				return nil, fmt.Errorf("%s: %q: %w", m.Key, s, err)
			}
			quoted = append(quoted, `"`+s+`"`)
		}
		m.Sources, m.Source = quoted, src.configMapSource(m.Key)
		out = append(out, m)
	}
	return out, nil
}
