// Package problems logs the problems of each Ingress, once per change: the
// translator logs those it finds, the annotations stage those of the
// plugins and the plugin host. Without a Kubernetes API to write Events to,
// these log lines are how an operator learns why an Ingress is not served
// as written; tests parse them (integration/cve_test.go, problemsLogged),
// so the message and the field names are fixed.
package problems

import (
	"slices"

	"go.uber.org/zap"

	"switchyard.dev/switchyard/bus"
)

// Message is the message of every line the Reporter logs.
const Message = "ingress problem"

// Reporter remembers each Ingress's problems as last logged, by table key,
// so that they are logged when they change rather than on every
// generation. It is not safe for concurrent use.
type Reporter struct {
	log      *zap.Logger
	reported map[string][]bus.Problem
}

// NewReporter returns a Reporter that logs to log.
func NewReporter(log *zap.Logger) *Reporter {
	return &Reporter{log: log, reported: map[string][]bus.Problem{}}
}

// Report logs the problems of the Ingress whose information is under key,
// unless they are the ones last logged for key. A problem's message quotes
// a value only cut short; values are never logged whole.
func (r *Reporter) Report(key string, info *bus.IngressInfo) {
	if slices.Equal(r.reported[key], info.Problems) {
		return
	}
	r.reported[key] = info.Problems
	for _, p := range info.Problems {
		r.log.Warn(Message,
			zap.String("ingress", info.Namespace+"/"+info.Name), zap.Bool("rejected", info.Rejected),
			zap.String("field", p.Field), zap.String("reason", p.Reason), zap.String("message", p.Message))
	}
}

// Forget drops what was logged for key, whose Ingress is gone: should it
// come back with the same problems, they are logged again.
func (r *Reporter) Forget(key string) { delete(r.reported, key) }
