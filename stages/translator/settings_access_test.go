package translator

import (
	"reflect"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus"
)

func whitelistField(s *bus.Settings) *[]string  { return &s.WhitelistSourceRange }
func denylistField(s *bus.Settings) *[]string   { return &s.DenylistSourceRange }
func blockCIDRsField(s *bus.Settings) *[]string { return &s.BlockCIDRs }
func blockUAField(s *bus.Settings) *[]string    { return &s.BlockUserAgents }
func blockRefField(s *bus.Settings) *[]string   { return &s.BlockReferers }

var accessSettingsCases = map[string]keyCases{
	"whitelist-source-range": cidrListCases(whitelistField),
	"denylist-source-range":  cidrListCases(denylistField),
	"block-cidrs":            cidrListCases(blockCIDRsField),
	"block-user-agents":      mapMatchCases(blockUAField),
	"block-referers":         mapMatchCases(blockRefField),
}

// cidrListCases: the list is canonical, sorted and unique; one bad item
// refuses the whole list.
func cidrListCases(field func(*bus.Settings) *[]string) keyCases {
	return keyCases{def: "",
		valid: []valid{
			{"", setStrings(field)}, {" , ", setStrings(field)},
			{"10.0.0.0/8", setStrings(field, "10.0.0.0/8")},
			{"192.168.1.7, 10.0.0.0/8,10.0.0.0/8", setStrings(field, "10.0.0.0/8", "192.168.1.7/32")},
			{"2001:db8::/32,::1", setStrings(field, "2001:db8::/32", "::1/128")},
			// Host bits are cleared, as NGINX does.
			{"10.1.2.3/8", setStrings(field, "10.0.0.0/8")},
		},
		invalid: []string{"10.0.0.0/33", "example.com", "10.0.0.0/8;", "10.0.0.1-10.0.0.9", "10.0.0.0/8 10.1.0.0/16",
			"fe80::1%eth0", "10.0.0.0/8,all", "0x0a000000", "10.0.0.0/8\ndeny all", strings.Repeat("10.0.0.1,", 1001)},
	}
}

// mapMatchCases: exact strings and safe regexes, each written quoted.
func mapMatchCases(field func(*bus.Settings) *[]string) keyCases {
	return keyCases{def: "",
		valid: []valid{
			{"", setStrings(field)},
			{"BadBot/1.0", setStrings(field, "BadBot/1.0")},
			{" ~*(sqlmap|nikto) , Mozilla/5.0 (compatible; Evil) ,", setStrings(field, "Mozilla/5.0 (compatible; Evil)", "~*(sqlmap|nikto)")},
			{`~^https?://spam\.example/`, setStrings(field, `~^https?://spam\.example/`)},
			{"~*bot$", setStrings(field, "~*bot$")},
		},
		invalid: []string{`a"b`, `~a"b`, `a\b`, `~a\\b`, `~a\tb`, "~(a+)+$", "~", "~*", "~(?i)a", "default", "Include",
			"a\nb", "a\x00b", "é", "~[", strings.Repeat("a", 513), "~" + strings.Repeat("a", 257), strings.Repeat("a,", 257)},
	}
}

// TestAccessKeysFailClosed: an unreadable access key is recorded, so the
// renderer can deny where it applies, and other keys are still read.
func TestAccessKeysFailClosed(t *testing.T) {
	got, problems := parseSettings(map[string]string{
		"whitelist-source-range": "10.0.0.0/8,nope", "block-cidrs": "192.0.2.0/24", "block-referers": `~"`,
	})
	want := bus.DefaultSettings()
	want.BlockCIDRs = []string{"192.0.2.0/24"}
	want.UnreadableAccessKeys = []string{"block-referers", "whitelist-source-range"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got.AccessSettings, want.AccessSettings)
	}
	if len(problems) != 2 || problems[0].Field != "data.block-referers" || problems[1].Field != "data.whitelist-source-range" {
		t.Fatalf("want problems for block-referers and whitelist-source-range, got %v", problems)
	}
	for _, p := range problems {
		if p.Reason != ReasonInvalidValue || !strings.Contains(p.Message, "answers 403") {
			t.Errorf("problem %v does not say the key fails closed", p)
		}
	}
}
