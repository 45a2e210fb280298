// Package telemetry is how the bus and the stages tell the metrics what
// they do, without importing a metrics library: a process sets one
// Observer (internal/metrics has it) and the code that publishes, handles
// generations or calls plugins reports to it. Unset, reports go nowhere.
package telemetry

import (
	"sync/atomic"
	"time"
)

// Observer hears what the stages of this process do.
type Observer interface {
	// BusSent is one message a stage published on its table: kind is the
	// key's first token (server, backend, commit, ...), bytes its payload.
	BusSent(stage, kind string, bytes int)
	// StageHandled is a stage done with a generation: committed says it
	// published a change (a commit message), ingest is when the change
	// entered the watcher (zero if unknown).
	StageHandled(stage string, generation uint64, ingest time.Time, committed bool)
	// PluginCall is one call of an annotation plugin.
	PluginCall(plugin string, took time.Duration, failed bool)
	// PluginRestart is a plugin process started again after it failed.
	PluginRestart(plugin string)
	// LeaderElection is this replica standing in (false) or leading (true)
	// the election named electionID (the Lease).
	LeaderElection(electionID string, leading bool)
}

type holder struct{ Observer }

var current atomic.Pointer[holder]

// Set makes o the observer of this process; nil stops reporting.
func Set(o Observer) {
	if o == nil {
		current.Store(nil)
		return
	}
	current.Store(&holder{o})
}

// Get is the observer of this process, or one that drops every report.
func Get() Observer {
	if h := current.Load(); h != nil {
		return h.Observer
	}
	return discard{}
}

type discard struct{}

func (discard) BusSent(string, string, int)                  {}
func (discard) StageHandled(string, uint64, time.Time, bool) {}
func (discard) PluginCall(string, time.Duration, bool)       {}
func (discard) PluginRestart(string)                         {}
func (discard) LeaderElection(string, bool)                  {}
