package renderer

import (
	"reflect"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/integration/harness"
)

// TestAccessGroups: the Ingress's own lists replace the ConfigMap's, each
// on its own; block-cidrs always applies; an unreadable list denies
// everyone where it applies.
func TestAccessGroups(t *testing.T) {
	own := func(allow, deny []string) *bus.Features {
		return &bus.Features{Access: &bus.Access{Allow: allow, Deny: deny}}
	}
	global := bus.AccessSettings{WhitelistSourceRange: []string{"10.0.0.0/8"}, DenylistSourceRange: []string{"10.1.0.0/16"},
		BlockCIDRs: []string{"192.0.2.0/24"}}
	unreadable := func(keys ...string) bus.AccessSettings {
		a := global
		a.UnreadableAccessKeys = keys
		return a
	}
	denyAll := []string{"deny all"}
	tests := []struct {
		name string
		f    *bus.Features
		a    bus.AccessSettings
		want []string
	}{
		{"nothing", nil, bus.AccessSettings{}, nil},
		{"own only", own([]string{"10.0.0.0/8"}, []string{"10.9.0.0/16"}), bus.AccessSettings{}, []string{"deny 10.9.0.0/16", "allow 10.0.0.0/8", "deny all"}},
		{"global only", nil, global, []string{"deny 192.0.2.0/24", "deny 10.1.0.0/16", "allow 10.0.0.0/8", "deny all"}},
		{"own allow replaces the whitelist", own([]string{"172.16.0.0/12"}, nil), global,
			[]string{"deny 192.0.2.0/24", "deny 10.1.0.0/16", "allow 172.16.0.0/12", "deny all"}},
		{"own deny replaces the denylist", own(nil, []string{"10.9.0.0/16"}), global,
			[]string{"deny 192.0.2.0/24", "deny 10.9.0.0/16", "allow 10.0.0.0/8", "deny all"}},
		{"unreadable whitelist", nil, unreadable(bus.KeyWhitelistSourceRange), denyAll},
		{"unreadable whitelist, own allow", own([]string{"172.16.0.0/12"}, nil), unreadable(bus.KeyWhitelistSourceRange),
			[]string{"deny 192.0.2.0/24", "deny 10.1.0.0/16", "allow 172.16.0.0/12", "deny all"}},
		{"unreadable denylist, own allow", own([]string{"172.16.0.0/12"}, nil), unreadable(bus.KeyDenylistSourceRange), denyAll},
		{"unreadable block-user-agents, own lists", own([]string{"172.16.0.0/12"}, []string{"10.9.0.0/16"}), unreadable(bus.KeyBlockUserAgents), denyAll},
		{"unreadable block-cidrs", nil, unreadable(bus.KeyBlockCIDRs), denyAll},
	}
	for _, tt := range tests {
		groups, err := accessGroups(tt.f, tt.a, sources{})
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		var got []string
		for _, g := range groups {
			got = append(got, g.Lines...)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, got, tt.want)
		}
	}
	if _, err := accessGroups(nil, bus.AccessSettings{BlockCIDRs: []string{"10.0.0.1/8"}}, sources{}); err == nil {
		t.Error("a CIDR that is not canonical was written")
	}
}

// TestBlockMapsRecheck: a map source that is not valid never reaches
// nginx.conf, even if the translator were bypassed.
func TestBlockMapsRecheck(t *testing.T) {
	for _, bad := range []string{`a"; deny all; #`, "~(a+)+$", `~a\\`, "default", "a\nb"} {
		if _, err := blockMaps(bus.AccessSettings{BlockUserAgents: []string{bad}}, sources{}); err == nil {
			t.Errorf("%q written", bad)
		}
	}
}

// TestRefusedAccessKeyFailsClosed: when NGINX refuses the lines of an
// access key, the renderer does not fall back to the key's default (no
// list: everyone let in) but denies every location it applies to.
func TestRefusedAccessKeyFailsClosed(t *testing.T) {
	cfg := DefaultConfig()
	m := harness.ReadModel(t, "testdata/basic.model.json")
	s := bus.DefaultSettings()
	s.WhitelistSourceRange = []string{"10.0.0.0/8"}
	s.BlockUserAgents = []string{"BadBot"}
	m.Settings = &s
	for _, key := range []string{bus.KeyWhitelistSourceRange, bus.KeyBlockUserAgents} {
		rev := settingRev(&s, key)
		ref := &bus.Refusal{Kind: bus.RefusedConfigMap, Name: key, Rev: rev, Message: "refused"}
		art, errs := RenderRefused(cfg, m, map[string]*bus.Refusal{ref.Key(): ref})
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		shop := art.Files[ServerFile("shop.example.com")]
		if strings.Count(shop, "cannot be enforced") != strings.Count(shop, "    location ") || strings.Contains(shop, "allow 10.0.0.0/8") {
			t.Errorf("%s refused: the locations do not deny everyone:\n%s", key, shop)
		}
		if strings.Contains(shop, "# source configmap "+key) || strings.Contains(art.Files[MainFile], "# source configmap "+key) {
			t.Errorf("%s refused: still attributed to the key", key)
		}
		if !strings.Contains(art.Files[MainFile], "# refused configmap "+key+" rev="+rev) {
			t.Errorf("%s refused: the refusal is not listed", key)
		}
		if key == bus.KeyBlockUserAgents && strings.Contains(art.Files[MainFile], "BadBot") {
			t.Error("the refused block-user-agents map is still written")
		}
		nginxTestArchive(t, archive(t, art))
	}
}
