package features

import (
	"strings"
	"testing"
)

func TestRateLimitValidate(t *testing.T) {
	cases := []struct {
		name string
		rl   RateLimit
		err  string // "" when valid
	}{
		{"limits", RateLimit{RPS: 10, RPM: 600, Connections: 65535, BurstMultiplier: 1000, RateKB: 1, RateAfterKB: 10000000}, ""},
		{"allowlist", RateLimit{RPS: 1, Allowlist: []string{"10.0.0.0/8", "127.0.0.1/32", "::/0", "fd00::/8"}}, ""},
		{"negative", RateLimit{RPS: -1}, "rps"},
		{"connections over 65535", RateLimit{Connections: 65536}, "connections"},
		{"multiplier", RateLimit{BurstMultiplier: 1001}, "burstMultiplier"},
		{"rate", RateLimit{RateKB: MaxRateKB + 1}, "rateKB"},
		{"host bits", RateLimit{Allowlist: []string{"10.0.0.1/8"}}, "canonical"},
		{"bare address", RateLimit{Allowlist: []string{"10.0.0.1"}}, "canonical"},
		{"upper-case IPv6", RateLimit{Allowlist: []string{"FD00::/8"}}, "canonical"},
		{"injection", RateLimit{Allowlist: []string{"10.0.0.0/8 1;\n}"}}, "canonical"},
		{"variable", RateLimit{Allowlist: []string{"$remote_addr"}}, "canonical"},
		{"too many", RateLimit{Allowlist: make([]string, MaxAllowlist+1)}, "at most"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &Features{RateLimit: &c.rl}
			err := f.Validate()
			if c.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.err) || !strings.HasPrefix(err.Error(), "rateLimit: ") {
				t.Fatalf("error %v, want one about %s", err, c.err)
			}
		})
	}
}
