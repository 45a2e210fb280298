package features

import (
	"errors"
	"fmt"
	"regexp"
)

// Balancing is the balancing plugin's group: how the Lua balancer picks an
// endpoint of the Ingress's backends. It never reaches nginx.conf: the
// annotations stage copies it onto the Backends, which Lua reads,
// so a change is a backend push and never a reload.
type Balancing struct {
	// LoadBalance is round_robin or ewma; empty keeps the ConfigMap's
	// load-balance. Hashing and affinity below win over it, as in Lua.
	LoadBalance string `json:"loadBalance,omitempty"`
	// UpstreamHash is upstream-hash-by and its subset settings.
	UpstreamHash *UpstreamHashByConfig `json:"upstreamHash,omitempty"`
	// Affinity is cookie affinity (affinity and session-cookie-*).
	Affinity *SessionAffinityConfig `json:"affinity,omitempty"`
	// AffinityCanaryBehavior is affinity-canary-behavior, sticky or legacy.
	// Recorded for completeness; the Lua balancer does not act on it (see
	// the balancing plugin's documentation).
	AffinityCanaryBehavior string `json:"affinityCanaryBehavior,omitempty"`
}

var (
	// balancingLoadBalancePattern: the algorithms that need no settings of
	// their own; chash and sticky come from UpstreamHash and Affinity.
	balancingLoadBalancePattern = regexp.MustCompile(`^(?:round_robin|ewma)?$`)
	affinityCanaryPattern       = regexp.MustCompile(`^(?:sticky|legacy)?$`)
)

func (b *Balancing) validate() error {
	if b == nil {
		return nil
	}
	var errs []error
	if !balancingLoadBalancePattern.MatchString(b.LoadBalance) {
		errs = append(errs, fmt.Errorf("loadBalance %q: want round_robin or ewma", b.LoadBalance))
	}
	if !affinityCanaryPattern.MatchString(b.AffinityCanaryBehavior) {
		errs = append(errs, fmt.Errorf("affinityCanaryBehavior %q: want sticky or legacy", b.AffinityCanaryBehavior))
	}
	if h := b.UpstreamHash; h != nil {
		if h.UpstreamHashBy == "" {
			errs = append(errs, errors.New("upstreamHash: upstream-hash-by is empty"))
		} else if err := h.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("upstreamHash: %w", err))
		}
	}
	if a := b.Affinity; a != nil {
		if a.Name != AffinityCookie {
			errs = append(errs, fmt.Errorf("affinity: name %q: only %q is supported", a.Name, AffinityCookie))
		} else if err := a.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("affinity: %w", err))
		}
	}
	return errors.Join(errs...)
}
