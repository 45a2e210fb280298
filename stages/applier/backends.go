package applier

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"
)

// How a backends push went out (bus.ApplyResult.BackendsPost).
const (
	postFull  = "full"
	postDelta = "delta"
)

// backendsPush is what one push of the backends sent.
type backendsPush struct {
	mode  string // postFull or postDelta
	bytes int    // the bodies posted, a refused delta included
}

// pushBackends brings the data plane's backends to d's. When the applier
// knows which version the data plane stores (the answer to its last
// successful post) it sends only what changed since, on top of that
// version; otherwise, or when the data plane refuses the delta as stale,
// it sends them all. Any failure forgets the version, so the next push is
// a full one: after a failed post nobody knows what the dicts hold.
func (s *Stage) pushBackends(ctx context.Context, d desiredState, dicts string) (backendsPush, error) {
	var push backendsPush
	if s.backendsVersion != 0 && !s.cfg.FullBackendPosts {
		body := d.backendsDelta(s.running.backends, s.backendsVersion)
		if body == nil {
			return backendsPush{mode: postDelta}, nil
		}
		push = backendsPush{mode: postDelta, bytes: len(body)}
		version, err := s.control.postTo(ctx, "/configuration/backends/delta", body, dicts)
		if err == nil {
			s.backendsVersion = version
			return push, nil
		}
		s.backendsVersion = 0
		if !errors.Is(err, errStale) {
			return push, fmt.Errorf("push backends delta: %w", err)
		}
		s.log.Warn("the data plane does not hold the backends the applier last posted; posting them all", zap.Error(err))
	}
	body := d.backendsPayload()
	push = backendsPush{mode: postFull, bytes: push.bytes + len(body)}
	version, err := s.control.postTo(ctx, "/configuration/backends", body, dicts)
	if err != nil {
		return push, fmt.Errorf("push backends: %w", err)
	}
	s.backendsVersion = version
	return push, nil
}
