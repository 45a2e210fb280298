package access

import (
	"reflect"
	"regexp"
	"testing"

	"switchyard.dev/switchyard/bus/features"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		in       map[string]string
		want     *features.Access
		errKeys  []string
		warnKeys []string
	}{
		{name: "nothing", in: map[string]string{}},
		{name: "allow list, canonical and sorted", in: map[string]string{KeyAllow: "192.168.1.1, 10.0.0.0/8,2001:db8::/32"},
			want: &features.Access{Allow: []string{"10.0.0.0/8", "192.168.1.1/32", "2001:db8::/32"}}},
		{name: "deny list", in: map[string]string{KeyDeny: "127.0.0.2"}, want: &features.Access{Deny: []string{"127.0.0.2/32"}}},
		{name: "both", in: map[string]string{KeyAllow: "127.0.0.0/8", KeyDeny: "127.0.0.3"},
			want: &features.Access{Allow: []string{"127.0.0.0/8"}, Deny: []string{"127.0.0.3/32"}}},
		{name: "host bits cleared with a warning", in: map[string]string{KeyAllow: "192.168.11.20/24"},
			want: &features.Access{Allow: []string{"192.168.11.0/24"}}, warnKeys: []string{KeyAllow}},
		{name: "bad CIDR rejects", in: map[string]string{KeyAllow: "10.0.0.0/33"}, errKeys: []string{KeyAllow}},
		{name: "not an address rejects", in: map[string]string{KeyDeny: "1.2.3"}, errKeys: []string{KeyDeny}},
		{name: "zone rejects", in: map[string]string{KeyAllow: "fe80::1%eth0"}, errKeys: []string{KeyAllow}},
		{name: "empty rejects rather than serve open", in: map[string]string{KeyAllow: " "}, errKeys: []string{KeyAllow}},
		{name: "satisfy any", in: map[string]string{KeyAllow: "127.0.0.1", KeySatisfy: " any"},
			want: &features.Access{Allow: []string{"127.0.0.1/32"}, SatisfyAny: true}},
		{name: "satisfy all is the default", in: map[string]string{KeySatisfy: "all"}},
		{name: "one bad list rejects both", in: map[string]string{KeyAllow: "10.0.0.0/8", KeyDeny: "x"}, errKeys: []string{KeyDeny}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, errs := Parse(tc.in)
			var errKeys, warnKeys []string
			for _, e := range errs {
				if e.Warning {
					warnKeys = append(warnKeys, e.Key)
				} else {
					errKeys = append(errKeys, e.Key)
				}
			}
			if !reflect.DeepEqual(errKeys, tc.errKeys) || !reflect.DeepEqual(warnKeys, tc.warnKeys) {
				t.Fatalf("errors %v, warnings %v; want %v, %v (%v)", errKeys, warnKeys, tc.errKeys, tc.warnKeys, errs)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestDescribe: the patterns compile as the host compiles them, the risk
// is ingress-nginx's, and whitelist-source-range is the alias.
func TestDescribe(t *testing.T) {
	d := New().Describe()
	if len(d.Annotations) != 3 || d.Annotations[0].Aliases[0] != "whitelist-source-range" {
		t.Fatalf("annotations %+v", d.Annotations)
	}
	for _, a := range d.Annotations {
		if _, err := regexp.Compile(`^(?:` + a.Pattern + `)$`); err != nil {
			t.Errorf("%s: %v", a.Key, err)
		}
		want := "Medium"
		if a.Key == KeySatisfy {
			want = "Low"
		}
		if a.Risk.String() != want {
			t.Errorf("%s: risk %s, want %s", a.Key, a.Risk, want)
		}
	}
}

// FuzzParse: Parse never panics, and what it returns always validates.
func FuzzParse(f *testing.F) {
	f.Add("10.0.0.0/8, 192.168.0.1", "::1")
	f.Add("fe80::1%eth0", "1.2.3.4/33")
	f.Fuzz(func(t *testing.T, allow, deny string) {
		got, _ := Parse(map[string]string{KeyAllow: allow, KeyDeny: deny})
		if err := (&features.Features{Access: got}).Validate(); err != nil {
			t.Fatalf("Parse(%q, %q) = %+v, which does not validate: %v", allow, deny, got, err)
		}
	})
}
