package applier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"go.uber.org/zap"
)

// How a push of named values went out (bus.ApplyResult.BackendsPost).
const (
	postFull  = "full"
	postDelta = "delta"
)

// namedKind is a kind of named values the Lua endpoint stores one key
// each (lua/switchyard/util/backend_store.lua), with a full and a delta
// endpoint: the backends, by name, and the routes of Lua-routed hosts, by
// host.
type namedKind struct {
	path  string // the full endpoint; the delta one is path + "/delta"
	field string // the delta's array of values
}

var (
	backendsKind = namedKind{path: "/configuration/backends", field: "backends"}
	routesKind   = namedKind{path: "/configuration/routes", field: "routes"}
)

// backendsPush is what one push of named values sent.
type backendsPush struct {
	mode  string // postFull or postDelta
	bytes int    // the bodies posted, a refused delta included
}

// pushNamed brings the data plane's values of kind to the desired ones:
// full is the body of a post of them all, delta the body of a post of
// what changed since the running ones on top of a stored version (nil
// when nothing did). When the applier knows which version the data plane
// stores (*version, the answer to its last successful post) it sends only
// what changed since; otherwise, or when the data plane refuses the delta
// as stale, it sends them all. Any failure forgets the version, so the
// next push is a full one: after a failed post nobody knows what the dicts
// hold.
func (s *Stage) pushNamed(ctx context.Context, kind namedKind, full func() []byte, delta func(base uint64) []byte, version *uint64, dicts string) (backendsPush, error) {
	var push backendsPush
	if *version != 0 && !s.cfg.FullBackendPosts {
		body := delta(*version)
		if body == nil {
			return backendsPush{mode: postDelta}, nil
		}
		push = backendsPush{mode: postDelta, bytes: len(body)}
		v, err := s.control.postTo(ctx, kind.path+"/delta", body, dicts)
		if err == nil {
			*version = v
			return push, nil
		}
		*version = 0
		if !errors.Is(err, errStale) {
			return push, fmt.Errorf("push %s delta: %w", kind.field, err)
		}
		s.log.Warn("the data plane does not hold what the applier last posted; posting everything",
			zap.String("kind", kind.field), zap.Error(err))
	}
	body := full()
	push = backendsPush{mode: postFull, bytes: push.bytes + len(body)}
	v, err := s.control.postTo(ctx, kind.path, body, dicts)
	if err != nil {
		return push, fmt.Errorf("push %s: %w", kind.field, err)
	}
	*version = v
	return push, nil
}

// pushBackends brings the data plane's backends to d's.
func (s *Stage) pushBackends(ctx context.Context, d desiredState, dicts string) (backendsPush, error) {
	return s.pushNamed(ctx, backendsKind, d.backendsPayload, func(base uint64) []byte {
		return d.backendsDelta(&s.running.backends, base)
	}, &s.backendsVersion, dicts)
}

// pushRoutes brings the data plane's routes to routes, unless they are
// there already; fresh forces the push (a new NGINX, new dicts).
func (s *Stage) pushRoutes(ctx context.Context, routes map[string]json.RawMessage, fresh bool, dicts string) (bool, error) {
	if !fresh && s.routesVersion != 0 && (sameMap(routes, s.running.routes) || maps.EqualFunc(routes, s.running.routes, jsonEqual)) {
		return false, nil
	}
	if fresh {
		s.routesVersion = 0
	}
	full := func() []byte { return namedPayload(routes) }
	delta := func(base uint64) []byte { return namedDelta(routesKind.field, routes, s.running.routes, base) }
	if _, err := s.pushNamed(ctx, routesKind, full, delta, &s.routesVersion, dicts); err != nil {
		return false, err
	}
	s.running.routes = routes
	return true, nil
}

// sameMap says whether a and b are one map: a change that touched no
// route hands on the very map pushed last (desiredTable copies a kind's
// map only to write it), and comparing its 10,000 routes one by one would
// cost each endpoint change milliseconds.
func sameMap[V any](a, b map[string]V) bool {
	return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
}

// keptRoutes are the routes to hold while a reload is coming: next's,
// and the running ones next drops. A host that moves from Lua to a server
// block keeps its route until the block serves it (NGINX picks the block
// over the catch-all from then on); a host that is gone goes with the
// reload. The passthrough hosts' endpoint files are kept the same way:
// the running stream file still passes a dropped host through.
func keptRoutes[V any](next, running map[string]V) map[string]V {
	out := maps.Clone(next)
	for host, route := range running {
		if _, ok := out[host]; !ok {
			out[host] = route
		}
	}
	return out
}
