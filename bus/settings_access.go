package bus

import "slices"

// AccessSettings are the controller ConfigMap's global access controls:
// source ranges for every location whose Ingress sets none of its own, and
// the block lists every server applies.
type AccessSettings struct {
	// WhitelistSourceRange is whitelist-source-range: canonical CIDRs
	// allowed to reach every location whose Ingress has no
	// allowlist-source-range (the annotation replaces it, as in
	// ingress-nginx); every other client gets 403.
	WhitelistSourceRange []string `json:"whitelistSourceRange,omitempty"`
	// DenylistSourceRange is denylist-source-range: canonical CIDRs that
	// get 403 on every location whose Ingress has no denylist-source-range.
	DenylistSourceRange []string `json:"denylistSourceRange,omitempty"`
	// BlockCIDRs is block-cidrs: canonical CIDRs that get 403 everywhere,
	// whatever the Ingress says.
	BlockCIDRs []string `json:"blockCIDRs,omitempty"`
	// BlockUserAgents and BlockReferers are block-user-agents and
	// block-referers: NGINX map sources (features.ValidMapMatch) matched
	// against User-Agent and Referer; a match gets 403 on every server.
	BlockUserAgents []string `json:"blockUserAgents,omitempty"`
	BlockReferers   []string `json:"blockReferers,omitempty"`
	// UnreadableAccessKeys are the keys above whose value could not be
	// read, or whose lines NGINX refused, sorted. Such a control cannot be
	// enforced, so it fails closed: every location it would apply to
	// answers 403 until the key is fixed.
	UnreadableAccessKeys []string `json:"unreadableAccessKeys,omitempty"`
}

// The access keys, as the ConfigMap spells them.
const (
	KeyWhitelistSourceRange = "whitelist-source-range"
	KeyDenylistSourceRange  = "denylist-source-range"
	KeyBlockCIDRs           = "block-cidrs"
	KeyBlockUserAgents      = "block-user-agents"
	KeyBlockReferers        = "block-referers"
)

// AccessKeys are the keys of AccessSettings: a value of one of them that
// cannot be enforced fails closed instead of falling back to the default,
// which would let everyone in.
var AccessKeys = []string{KeyWhitelistSourceRange, KeyDenylistSourceRange, KeyBlockCIDRs, KeyBlockUserAgents, KeyBlockReferers}

// defaultAccessSettings are ingress-nginx's defaults: no list.
func defaultAccessSettings() AccessSettings { return AccessSettings{} }

// MarkUnreadable records that key's control cannot be enforced.
func (a *AccessSettings) MarkUnreadable(key string) {
	if slices.Contains(a.UnreadableAccessKeys, key) {
		return
	}
	// A new slice: settings are copied by value and must not share it.
	a.UnreadableAccessKeys = append(slices.Clone(a.UnreadableAccessKeys), key)
	slices.Sort(a.UnreadableAccessKeys)
}

// Unreadable says whether key's control cannot be enforced.
func (a *AccessSettings) Unreadable(key string) bool {
	return slices.Contains(a.UnreadableAccessKeys, key)
}
