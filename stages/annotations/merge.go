package annotations

import (
	"fmt"

	"switchyard.dev/switchyard/bus"
)

// Each plugin returns the feature groups it decides for an Ingress; the
// host merges them into the Ingress's one set of features.

// mergeFeatures adds the groups of other into f. A group set in both is a conflict:
// two plugins must never decide the same thing.
func mergeFeatures(f, other *bus.Features) error {
	if other == nil {
		return nil
	}
	// Deny is the exception: the first denial stands, whoever says it.
	if f.Deny == nil {
		f.Deny = other.Deny
	}
	f.ResponseHeaders = append(f.ResponseHeaders, other.ResponseHeaders...)
	if err := mergeGroup("canary", &f.Canary, other.Canary); err != nil {
		return err
	}
	if err := mergeGroup("auth", &f.Auth, other.Auth); err != nil {
		return err
	}
	if err := mergeGroup("rateLimit", &f.RateLimit, other.RateLimit); err != nil {
		return err
	}
	if err := mergeGroup("redirect", &f.Redirect, other.Redirect); err != nil {
		return err
	}
	if err := mergeGroup("rewrite", &f.Rewrite, other.Rewrite); err != nil {
		return err
	}
	if err := mergeGroup("balancing", &f.Balancing, other.Balancing); err != nil {
		return err
	}
	if err := mergeGroup("proxy", &f.Proxy, other.Proxy); err != nil {
		return err
	}
	if err := mergeGroup("server", &f.Server, other.Server); err != nil {
		return err
	}
	if err := mergeGroup("logs", &f.Logs, other.Logs); err != nil {
		return err
	}
	if err := mergeGroup("access", &f.Access, other.Access); err != nil {
		return err
	}
	if err := mergeGroup("upstream", &f.Upstream, other.Upstream); err != nil {
		return err
	}
	if err := mergeGroup("errors", &f.Errors, other.Errors); err != nil {
		return err
	}
	if err := mergeGroup("cors", &f.CORS, other.CORS); err != nil {
		return err
	}
	if err := mergeGroup("clientAuth", &f.ClientAuth, other.ClientAuth); err != nil {
		return err
	}
	if err := mergeGroup("mirror", &f.Mirror, other.Mirror); err != nil {
		return err
	}
	if err := mergeGroup("globalAuth", &f.GlobalAuth, other.GlobalAuth); err != nil {
		return err
	}
	if err := mergeGroup("passthrough", &f.Passthrough, other.Passthrough); err != nil {
		return err
	}
	if err := mergeGroup("modSecurity", &f.ModSecurity, other.ModSecurity); err != nil {
		return err
	}
	if err := mergeGroup("tracing", &f.Tracing, other.Tracing); err != nil {
		return err
	}
	return nil
}

// mergeGroup sets *dst to src, refusing a group two plugins both set.
func mergeGroup[T any](name string, dst **T, src *T) error {
	if src == nil {
		return nil
	}
	if *dst != nil {
		return fmt.Errorf("two plugins set %s", name)
	}
	*dst = src
	return nil
}
