package applier

import "time"

// Reload timing, beside decide: decide says what an apply must do, and
// decideReload says whether the reload it needs happens now or waits for
// the reload slot. Both are pure; the apply loop owns the clock and the
// timers.

// reloadFacts is what decideReload decides from.
type reloadFacts struct {
	// Now is the time of the decision.
	Now time.Time
	// LastReload is when NGINX last reloaded; zero before the first.
	LastReload time.Time
	// MinInterval is Config.MinReloadInterval as configured: zero means
	// DefaultMinReloadInterval, a negative value never holds a reload back.
	MinInterval time.Duration
	// Fresh: NGINX is being (re)started, which loads the configuration
	// without a reload.
	Fresh bool
	// SlotCame: the reload slot an earlier held change set has come; the
	// reload goes ahead whatever the interval says.
	SlotCame bool
}

// reloadDecision is when the reload a changed configuration needs happens.
type reloadDecision struct {
	// Hold: too soon after the last reload. The configuration is left for
	// the reload slot, which takes the newest state then; the dynamic part
	// is pushed at once.
	Hold bool
	// Slot is how long until the reload slot: each change that waits pushes
	// it back, until changes stop for reloadQuiet or the interval is over,
	// so a burst is one reload at its end and a lone change waits only
	// reloadQuiet. It is zero once the interval is over.
	Slot time.Duration
}

// decideReload decides, for an apply whose plan writes the configuration,
// whether NGINX reloads now or at the reload slot. The first change of a
// quiet period reloads at once.
func decideReload(in reloadFacts) reloadDecision {
	wait := reloadWait(in.MinInterval, in.LastReload, in.Now)
	return reloadDecision{
		Hold: !in.Fresh && !in.SlotCame && wait > 0,
		Slot: min(reloadQuiet, wait),
	}
}

// reloadWait is how long a reload must still wait at now.
func reloadWait(interval time.Duration, lastReload, now time.Time) time.Duration {
	switch {
	case interval < 0:
		return 0
	case interval == 0:
		interval = DefaultMinReloadInterval
	}
	return max(0, interval-now.Sub(lastReload))
}
