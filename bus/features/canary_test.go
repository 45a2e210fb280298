package features

import (
	"strings"
	"testing"
)

func TestCanaryValidate(t *testing.T) {
	ok := func(c Canary) Canary { return c }
	for _, tc := range []struct {
		name string
		c    Canary
		err  string // "" means valid
	}{
		{"weight only", ok(Canary{Weight: 10, WeightTotal: 100}), ""},
		{"full", Canary{Weight: 1, WeightTotal: 4, Header: "X-Canary_2", HeaderValue: "v 2", Cookie: "c.v-1"}, ""},
		{"pattern with regex characters", Canary{WeightTotal: 100, Header: "H", HeaderPattern: `^v\d{1,3}$`}, ""},
		{"zero total", Canary{WeightTotal: 0}, "weightTotal"},
		{"total too big", Canary{WeightTotal: MaxCanaryWeightTotal + 1}, "weightTotal"},
		{"negative weight", Canary{Weight: -1, WeightTotal: 100}, "weight"},
		{"weight over total", Canary{Weight: 101, WeightTotal: 100}, "weight"},
		{"header with space", Canary{WeightTotal: 100, Header: "X Canary"}, "header"},
		{"header with dollar", Canary{WeightTotal: 100, Header: "a$b"}, "header"},
		{"value without header", Canary{WeightTotal: 100, HeaderValue: "v"}, "need a header"},
		{"value with quote", Canary{WeightTotal: 100, Header: "H", HeaderValue: `a"b`}, "headerValue"},
		{"value with newline", Canary{WeightTotal: 100, Header: "H", HeaderValue: "a\nb"}, "headerValue"},
		{"pattern not a regexp", Canary{WeightTotal: 100, Header: "H", HeaderPattern: "(a"}, "headerPattern"},
		{"pattern with quote", Canary{WeightTotal: 100, Header: "H", HeaderPattern: `a"`}, "headerPattern"},
		{"pattern with NUL", Canary{WeightTotal: 100, Header: "H", HeaderPattern: "a\x00"}, "headerPattern"},
		{"cookie with semicolon", Canary{WeightTotal: 100, Cookie: "a;b"}, "cookie"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.c
			err := (&Features{Canary: &c}).Validate()
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("got %v, want an error about %s", err, tc.err)
			}
		})
	}
}
