package bus

import (
	"errors"
	"fmt"
)

// Balancing settings of a Backend are typed in bus/features
// (backend_balancing.go); Backend.Validate is the controller-side check.

// Validate checks the balancing settings with whole-string patterns. A
// Backend without any is valid.
func (b *Backend) Validate() error {
	var errs []error
	switch b.LoadBalance {
	case "", LoadBalanceRoundRobin, LoadBalanceEWMA, LoadBalanceCHash, LoadBalanceCHashSubset,
		LoadBalanceStickyBalanced, LoadBalanceStickyPersistent:
	default:
		errs = append(errs, fmt.Errorf("load-balance %q: want one of round_robin, ewma, chash, chashsubset, sticky_balanced, sticky_persistent", b.LoadBalance))
	}
	if h := b.UpstreamHashByConfig; h != nil {
		if err := h.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("upstreamHashByConfig: %w", err))
		}
	}
	if a := b.SessionAffinityConfig; a != nil {
		if err := a.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("sessionAffinityConfig: %w", err))
		}
	}
	return errors.Join(errs...)
}
