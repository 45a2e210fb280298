// Package ratelimit is the built-in plugin for ingress-nginx's rate
// limiting annotations: limit-rps, limit-rpm, limit-connections,
// limit-burst-multiplier, limit-rate, limit-rate-after and limit-allowlist
// (alias limit-whitelist). It turns them into a features.RateLimit; the
// renderer declares the zones and writes the directives.
package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"switchyard.dev/switchyard/bus/features"
	"switchyard.dev/switchyard/plugins"
)

// The annotation keys, relative to the controller's prefix.
const (
	KeyRPS             = "limit-rps"
	KeyRPM             = "limit-rpm"
	KeyConnections     = "limit-connections"
	KeyBurstMultiplier = "limit-burst-multiplier"
	KeyRate            = "limit-rate"
	KeyRateAfter       = "limit-rate-after"
	KeyAllowlist       = "limit-allowlist"
	KeyWhitelist       = "limit-whitelist"
)

// DefaultBurstMultiplier is ingress-nginx's: bursts of five times the limit.
const DefaultBurstMultiplier = 5

// countPattern is what the host checks before the plugin parses a number:
// digits only (ingress-nginx's ValidateInt takes no sign that makes sense
// here), nine at most so the value fits an int everywhere.
const countPattern = `[0-9]{1,9}`

// cidrListPattern admits the characters of a comma-separated list of
// addresses and CIDRs; ParseAllowlist checks each item and the count.
const cidrListPattern = `[0-9A-Fa-f:./, ]*`

// Plugin is the ratelimit plugin.
type Plugin struct{}

// New returns the plugin, for the built-in registry.
func New() plugins.Plugin { return plugins.PerIngress(Plugin{}) }

// Describe lists the keys the plugin owns, with ingress-nginx's scope and
// risk (all Low, location scope).
func (Plugin) Describe() plugins.Description {
	count := func(key, doc, def string) plugins.Annotation {
		return plugins.Annotation{Key: key, Pattern: countPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow, Doc: doc, Default: def}
	}
	return plugins.Description{
		Name: "ratelimit",
		Doc:  "Rate limiting per client address, as ingress-nginx: requests per second or minute, concurrent connections, response bandwidth, with an allowlist of CIDRs that are not limited.",
		Annotations: []plugins.Annotation{
			count(KeyRPS, "Requests per second a client address may make; above the burst (limit × limit-burst-multiplier) requests get limit-req-status-code (503).", ""),
			count(KeyRPM, "Requests per minute a client address may make; above the burst requests get limit-req-status-code (503).", ""),
			count(KeyConnections, "Concurrent connections a client address may hold; more get limit-conn-status-code (503).", ""),
			count(KeyBurstMultiplier, "Multiplier of limit-rps and limit-rpm giving the burst size.", strconv.Itoa(DefaultBurstMultiplier)),
			count(KeyRate, "Response rate to each client, in KB per second (0: unlimited).", "0"),
			count(KeyRateAfter, "KB of each response sent before limit-rate applies.", "0"),
			{
				Key: KeyAllowlist, Pattern: cidrListPattern, Scope: plugins.ScopeLocation, Risk: plugins.RiskLow,
				Doc:     "Comma-separated addresses or CIDRs whose clients are not limited by limit-rps, limit-rpm and limit-connections.",
				Aliases: []string{KeyWhitelist},
			},
		},
	}
}

// ApplyIngress parses an Ingress's annotations into a RateLimit.
func (Plugin) ApplyIngress(_ context.Context, in plugins.Ingress) (f plugins.Features, errs []plugins.Error) {
	rl, errs := Parse(in.Annotations)
	if len(errs) == 0 && rl != nil {
		f.RateLimit = rl
	}
	return f, errs
}

// Parse reads the annotations of one Ingress (by Key). It returns nil when
// they limit nothing, and an error per invalid annotation.
func Parse(annotations map[string]string) (*features.RateLimit, []plugins.Error) {
	rl := &features.RateLimit{BurstMultiplier: DefaultBurstMultiplier}
	var errs []plugins.Error
	for _, f := range []struct {
		key   string
		field *int
		max   int
	}{
		{KeyRPS, &rl.RPS, features.MaxRateLimit},
		{KeyRPM, &rl.RPM, features.MaxRateLimit},
		{KeyConnections, &rl.Connections, features.MaxConnectionLimit},
		{KeyBurstMultiplier, &rl.BurstMultiplier, features.MaxBurstMultiplier},
		{KeyRate, &rl.RateKB, features.MaxRateKB},
		{KeyRateAfter, &rl.RateAfterKB, features.MaxRateKB},
	} {
		v, ok := annotations[f.key]
		if !ok {
			continue
		}
		n, err := ParseCount(v, f.max)
		if err != nil {
			errs = append(errs, plugins.Errorf(f.key, "%v", err))
			continue
		}
		*f.field = n
	}
	var warnings []plugins.Error
	if v, ok := annotations[KeyAllowlist]; ok {
		cidrs, notes, err := ParseAllowlist(v)
		if err != nil {
			errs = append(errs, plugins.Errorf(KeyAllowlist, "%v", err))
		}
		for _, n := range notes {
			warnings = append(warnings, plugins.Error{Key: KeyAllowlist, Message: n, Warning: true})
		}
		rl.Allowlist = cidrs
	}
	if len(errs) > 0 {
		return nil, append(errs, warnings...)
	}
	if !rl.HasZones() {
		// As in ingress-nginx, the multiplier and the allowlist mean
		// nothing without a request or connection limit.
		rl.BurstMultiplier, rl.Allowlist = 0, nil
		if rl.RateKB == 0 && rl.RateAfterKB == 0 {
			return nil, warnings
		}
	}
	return rl, warnings
}

// ParseCount reads a whole number from 0 to max.
func ParseCount(v string, max int) (int, error) {
	v = strings.TrimSpace(v)
	if v == "" || strings.Trim(v, "0123456789") != "" || len(v) > 9 {
		return 0, fmt.Errorf("%q is not a whole number of at most 9 digits", clip(v))
	}
	n, err := strconv.Atoi(v)
	if err != nil || n > max {
		return 0, fmt.Errorf("%s is above the maximum %d", v, max)
	}
	return n, nil
}

// ParseAllowlist reads limit-allowlist: see features.ParseCIDRList.
func ParseAllowlist(v string) (cidrs, notes []string, err error) { return features.ParseCIDRList(v) }

// clip keeps a value short in an error message.
func clip(v string) string {
	if len(v) > 64 {
		return v[:64] + "…"
	}
	return v
}
