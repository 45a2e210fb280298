package bus

import (
	"strings"
	"testing"
)

func TestEscapeToken(t *testing.T) {
	cases := []struct{ in, want string }{
		{"default", "default"},
		{"my.app", "my_2eapp"},
		{"", "_e"},
		{"_", "_"},
		{"UPPER", "_55_50_50_45_52"},
		{"a b*>", "a_20b_2a_3e"},
	}
	for _, c := range cases {
		if got := EscapeToken(c.in); got != c.want {
			t.Errorf("EscapeToken(%q) = %q, want %q", c.in, got, c.want)
		}
		if back, err := UnescapeToken(c.want); err != nil || back != c.in {
			t.Errorf("UnescapeToken(%q) = %q, %v; want %q", c.want, back, err, c.in)
		}
	}
	for _, bad := range []string{"_4", "_zz", "a_"} {
		if _, err := UnescapeToken(bad); err == nil {
			t.Errorf("UnescapeToken(%q) accepted a broken escape", bad)
		}
	}
}

func TestKeyRoundTrip(t *testing.T) {
	key := ObjectKey(ObjectIngress, "shop", "web.v2")
	if key != "object.ingress.shop.web_2ev2" {
		t.Fatalf("key %q", key)
	}
	kind, parts, err := SplitKey(key)
	if err != nil || kind != KindObject || strings.Join(parts, "|") != "ingress|shop|web.v2" {
		t.Fatalf("SplitKey: %q %q %v", kind, parts, err)
	}
	if got := ObjectKey(ObjectIngressClass, "", "switchyard"); got != "object.ingressclass._.switchyard" {
		t.Fatalf("cluster-scoped key %q", got)
	}
}

// FuzzEscapeToken: any string escapes to one valid subject token, and back.
func FuzzEscapeToken(f *testing.F) {
	for _, s := range []string{"", "_", "a.b", "ns/name", "\x00\xff", "*", ">"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		tok := EscapeToken(s)
		if tok == "" || strings.ContainsAny(tok, ". *>\t\r\n") {
			t.Fatalf("EscapeToken(%q) = %q is not one subject token", s, tok)
		}
		back, err := UnescapeToken(tok)
		if err != nil || back != s {
			t.Fatalf("round trip of %q: %q, %v", s, back, err)
		}
	})
}
