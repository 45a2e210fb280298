package server

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"switchyard.dev/switchyard/bus/features"
)

func TestParse(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name string
		in   map[string]string
		want *features.Server
		err  string
	}{
		{"none", map[string]string{}, nil, ""},
		{"aliases", map[string]string{KeyServerAlias: " A.example.com, *.b.example.com ,a.example.com,"},
			&features.Server{Aliases: []string{"a.example.com", "*.b.example.com"}}, ""},
		{"ciphers", map[string]string{KeySSLCiphers: "HIGH:!aNULL", KeySSLPreferServerCiphers: "false"},
			&features.Server{SSLCiphers: "HIGH:!aNULL", SSLPreferServerCiphers: &no}, ""},
		{"prefer", map[string]string{KeySSLPreferServerCiphers: "True"}, &features.Server{SSLPreferServerCiphers: &yes}, ""},
		{"empty alias list", map[string]string{KeyServerAlias: " , "}, nil, ""},
		{"bad alias", map[string]string{KeyServerAlias: "a.example.com, b..example.com"}, nil, "is not a host name"},
		{"regex alias", map[string]string{KeyServerAlias: "~^a"}, nil, "is not a host name"},
		{"inner wildcard", map[string]string{KeyServerAlias: "a.*.com"}, nil, "is not a host name"},
		{"too many", map[string]string{KeyServerAlias: strings.Repeat("a.example.com,", 1) + manyAliases(40)}, nil, "at most 32"},
		{"bad bool", map[string]string{KeySSLPreferServerCiphers: "yes"}, nil, "not a boolean"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, errs := Parse(c.in)
			if c.err != "" {
				if len(errs) != 1 || !strings.Contains(errs[0].Message, c.err) || got != nil {
					t.Fatalf("got %+v, errors %+v; want an error saying %q", got, errs, c.err)
				}
				return
			}
			if len(errs) != 0 || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, errors %+v; want %+v", got, errs, c.want)
			}
			if err := (&features.Features{Server: got}).Validate(); err != nil {
				t.Fatalf("the features do not validate: %v", err)
			}
		})
	}
}

func manyAliases(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("a")
		b.WriteString(strings.Repeat("x", i))
		b.WriteString(".example.com,")
	}
	return b.String()
}

// FuzzParse: whatever the host lets through (the described patterns) and
// Parse accepts validates, and no alias or cipher list holds NGINX syntax.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"a.example.com", "*.x.io, y.io", "HIGH:!aNULL", "a;b", "a b", "true"} {
		f.Add(s, s, s)
	}
	patterns := map[string]*regexp.Regexp{}
	for _, a := range (Plugin{}).Describe().Annotations {
		patterns[a.Key] = regexp.MustCompile(`^(?:` + a.Pattern + `)$`)
	}
	f.Fuzz(func(t *testing.T, alias, ciphers, prefer string) {
		in := map[string]string{}
		for key, v := range map[string]string{KeyServerAlias: alias, KeySSLCiphers: ciphers, KeySSLPreferServerCiphers: prefer} {
			if patterns[key].MatchString(v) {
				in[key] = v
			}
		}
		got, errs := Parse(in)
		if len(errs) > 0 {
			return
		}
		if err := (&features.Features{Server: got}).Validate(); err != nil {
			t.Fatalf("accepted %+v does not validate: %v", got, err)
		}
		if got != nil {
			for _, a := range got.Aliases {
				if strings.ContainsAny(a, " ;{}\"'$\\~^") {
					t.Fatalf("alias %q accepted", a)
				}
			}
		}
	})
}
