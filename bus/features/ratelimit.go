package features

import (
	"fmt"
	"regexp"
)

// RateLimit is ingress-nginx's rate limiting (limit-rps, limit-rpm,
// limit-connections, limit-burst-multiplier, limit-rate, limit-rate-after,
// limit-allowlist) for every location of one Ingress. It holds numbers and
// CIDRs only: the renderer derives the NGINX zone names from the Ingress
// the location belongs to, so no plugin names anything in nginx.conf.
type RateLimit struct {
	// RPS and RPM limit requests per client address per second or minute;
	// 0 is no limit.
	RPS int `json:"rps,omitempty"`
	RPM int `json:"rpm,omitempty"`
	// Connections limits concurrent connections per client address.
	Connections int `json:"connections,omitempty"`
	// BurstMultiplier times RPS (or RPM) is the burst NGINX lets through
	// without delay before it refuses.
	BurstMultiplier int `json:"burstMultiplier,omitempty"`
	// RateKB limits the response rate to each client, in KB/s
	// (limit_rate); RateAfterKB is the first KBs sent unlimited.
	RateKB      int `json:"rateKB,omitempty"`
	RateAfterKB int `json:"rateAfterKB,omitempty"`
	// Allowlist are canonical CIDRs ("10.0.0.0/8", "::1/128") whose
	// clients are not limited by RPS, RPM or Connections.
	Allowlist []string `json:"allowlist,omitempty"`
}

// Bounds of the rate limit values: within what NGINX parses (limit_conn
// takes at most 65535) and far from overflowing burst = limit × multiplier.
const (
	MaxRateLimit       = 1000000
	MaxConnectionLimit = 65535
	MaxBurstMultiplier = 1000
	MaxRateKB          = 10000000
	MaxAllowlist       = 1000
)

// cidrPattern is the shape of a canonical CIDR; netip checks the rest.
var cidrPattern = regexp.MustCompile(`^[0-9a-f:.]{2,45}/[0-9]{1,3}$`)

// HasZones reports whether the limit needs shared memory zones (requests
// or connections counted per client), not only limit_rate.
func (r *RateLimit) HasZones() bool {
	return r.RPS > 0 || r.RPM > 0 || r.Connections > 0
}

func (r *RateLimit) validate() error {
	for _, v := range []struct {
		name       string
		value, max int
	}{
		{"rps", r.RPS, MaxRateLimit}, {"rpm", r.RPM, MaxRateLimit}, {"connections", r.Connections, MaxConnectionLimit},
		{"burstMultiplier", r.BurstMultiplier, MaxBurstMultiplier},
		{"rateKB", r.RateKB, MaxRateKB}, {"rateAfterKB", r.RateAfterKB, MaxRateKB},
	} {
		if v.value < 0 || v.value > v.max {
			return fmt.Errorf("%s %d is not between 0 and %d", v.name, v.value, v.max)
		}
	}
	// Canonical form only: the zone names hash the list, and NGINX's geo
	// refuses a prefix with host bits set.
	return validCIDRs("allowlist", r.Allowlist)
}
