package translator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
	"switchyard.dev/switchyard/internal/problems"
)

// Stage runs the translator on the bus: it follows the watcher's objects
// and publishes the model, recomputing only what a change touches.
type Stage struct {
	conn       *bus.Conn
	cfg        Config
	log        *zap.Logger
	translator *Translator
	// decoded keeps each object as last set, so a deletion can be applied.
	decoded map[string]any
	// problems logs each Ingress's problems when they change.
	problems *problems.Reporter
}

// New returns the translator stage.
func New(conn *bus.Conn, cfg Config, log *zap.Logger) *Stage {
	return &Stage{conn: conn, cfg: cfg, log: log, problems: problems.NewReporter(log)}
}

// Run translates after every commit of the watcher until ctx ends.
func (s *Stage) Run(ctx context.Context) error {
	return bus.Pipe(ctx, s.conn, bus.StageWatcher, bus.StageTranslator, s.log, s.translate)
}

func (s *Stage) translate(_ context.Context, in bus.Snapshot) (bus.Output, error) {
	full := in.Full || s.translator == nil
	if full {
		// The first snapshot: start over, and publish the whole table so
		// that keys left from an earlier run are deleted.
		s.translator, s.decoded = NewTranslator(s.cfg), map[string]any{}
	}
	for _, key := range in.Deletes {
		s.remove(key)
	}
	for key, data := range in.Puts {
		s.set(key, data)
		// Let each message go once decoded: the first snapshot is every
		// object, and holding them all while decoding doubles the peak.
		delete(in.Puts, key)
	}
	delta := s.translator.Flush()
	s.report(delta)
	// The writer encodes each value as it sends it, so the model is never
	// held encoded at once; nothing changes the model until it is sent.
	if full {
		return bus.Output{Values: s.translator.Model().Values(), Full: true}, nil
	}
	return bus.Output{Values: delta.Puts, Deletes: delta.Deletes}, nil
}

// set feeds one put object to the translator. An object that does not
// decode is left out (and reported), as if it were deleted.
func (s *Stage) set(key string, data []byte) {
	obj, err := DecodeEntry(key, data)
	if err != nil {
		s.log.Error("object left out", zap.String("key", key), zap.Error(err))
		s.remove(key)
		return
	}
	s.translator.Set(obj)
	s.decoded[key] = obj
}

// remove takes a deleted object out of the translator, if it was in.
func (s *Stage) remove(key string) {
	if old, ok := s.decoded[key]; ok {
		s.translator.Delete(old)
		delete(s.decoded, key)
	}
}

func (s *Stage) report(delta Delta) {
	if _, ok := delta.Puts[bus.SettingsKey]; ok {
		for _, p := range s.translator.SettingsProblems() {
			logAt, what := s.log.Warn, "controller ConfigMap problem; the default is kept"
			switch {
			case p.Reason == ReasonRefused:
				logAt = s.log.Error // a snippet or an access control that is not applied
			case p.Reason == ReasonNoEffect:
				what = "controller ConfigMap problem"
			case p.Reason == ReasonInvalidValue && slices.Contains(bus.AccessKeys, strings.TrimPrefix(p.Field, "data.")):
				logAt, what = s.log.Error, "controller ConfigMap problem; the access control fails closed (403 where it applies)"
			}
			logAt(what, zap.String("configmap", s.cfg.ConfigMap),
				zap.String("field", p.Field), zap.String("reason", p.Reason), zap.String("message", p.Message))
		}
	}
	if streams, ok := delta.Puts[bus.StreamServicesKey].(*bus.StreamServices); ok {
		for _, p := range streams.Problems {
			logAt := s.log.Warn
			if p.Reason != ReasonNoEndpoints && p.Reason != ReasonProxyIgnored {
				logAt = s.log.Error // the entry is not served
			}
			logAt("TCP/UDP services ConfigMap problem", zap.String("field", p.Field), zap.String("reason", p.Reason), zap.String("message", p.Message))
		}
	}
	for _, key := range delta.Deletes {
		s.problems.Forget(key)
	}
	for key, v := range delta.Puts {
		if info, ok := v.(*bus.IngressInfo); ok {
			s.problems.Report(key, info)
		}
	}
}

// DecodeEntry decodes one entry of the watcher's table into its typed object.
func DecodeEntry(key string, data []byte) (any, error) {
	kind, parts, err := bus.SplitKey(key)
	if err != nil {
		return nil, err
	}
	if kind != bus.KindObject || len(parts) != 3 {
		return nil, fmt.Errorf("key %q: want object.<kind>.<namespace>.<name>", key)
	}
	return bus.DecodeObject(parts[0], data)
}
