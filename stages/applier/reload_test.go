package applier

import (
	"slices"
	"testing"
	"time"
)

// t0 is the fake clock's epoch: every time in these tests is t0 plus an
// offset, and no test waits for real time.
var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func TestDecideReload(t *testing.T) {
	cases := []struct {
		name string
		in   reloadFacts
		want reloadDecision
	}{
		{"never reloaded", reloadFacts{Now: t0}, reloadDecision{}},
		{"after the default interval", reloadFacts{Now: t0.Add(time.Second), LastReload: t0}, reloadDecision{}},
		{"well within the default interval", reloadFacts{Now: t0.Add(ms(300)), LastReload: t0},
			reloadDecision{Hold: true, Slot: reloadQuiet}},
		{"near the end of the default interval", reloadFacts{Now: t0.Add(ms(950)), LastReload: t0},
			reloadDecision{Hold: true, Slot: ms(50)}},
		{"custom interval", reloadFacts{Now: t0.Add(ms(150)), LastReload: t0, MinInterval: ms(200)},
			reloadDecision{Hold: true, Slot: ms(50)}},
		{"custom interval over", reloadFacts{Now: t0.Add(ms(250)), LastReload: t0, MinInterval: ms(200)}, reloadDecision{}},
		{"negative interval never holds", reloadFacts{Now: t0.Add(ms(1)), LastReload: t0, MinInterval: -1}, reloadDecision{}},
		{"fresh NGINX loads at once", reloadFacts{Now: t0.Add(ms(300)), LastReload: t0, Fresh: true},
			reloadDecision{Slot: reloadQuiet}},
		{"the slot came", reloadFacts{Now: t0.Add(ms(300)), LastReload: t0, SlotCame: true},
			reloadDecision{Slot: reloadQuiet}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := decideReload(c.in); got != c.want {
				t.Fatalf("decideReload(%+v) = %+v, want %+v", c.in, got, c.want)
			}
		})
	}
}

// TestReloadTiming plays the apply loop on a fake clock: static changes
// arrive at the given offsets (each applied at once), and the test records
// when NGINX reloads, as Run does with decideReload: a held change arms the
// reload slot, a later held change re-arms it, and the slot reloads the
// newest state.
func TestReloadTiming(t *testing.T) {
	every := func(step, until int) []time.Duration {
		var out []time.Duration
		for at := 0; at <= until; at += step {
			out = append(out, ms(at))
		}
		return out
	}
	cases := []struct {
		name     string
		interval time.Duration
		changes  []time.Duration
		reloads  []time.Duration
	}{
		{"first change of a quiet period reloads at once", 0, []time.Duration{0}, []time.Duration{0}},
		{"changes further apart than the interval", 0, []time.Duration{0, ms(2000)}, []time.Duration{0, ms(2000)}},
		{"a lone change soon after a reload waits reloadQuiet", 0,
			[]time.Duration{0, ms(500)}, []time.Duration{0, ms(600)}},
		{"a change near the interval's end waits for the interval", 0,
			[]time.Duration{0, ms(950)}, []time.Duration{0, ms(1000)}},
		{"a short burst is one reload at its end", 0,
			[]time.Duration{0, ms(20), ms(40), ms(60), ms(80)}, []time.Duration{0, ms(180)}},
		{"a long burst reloads about once an interval", 0,
			every(70, 2450), []time.Duration{0, ms(1000), ms(2000), ms(2550)}},
		{"a custom interval", ms(200),
			[]time.Duration{0, ms(150), ms(400)}, []time.Duration{0, ms(200), ms(400)}},
		{"a negative interval never holds", -1,
			[]time.Duration{0, ms(10), ms(20)}, []time.Duration{0, ms(10), ms(20)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := playReloads(c.interval, c.changes); !slices.Equal(got, c.reloads) {
				t.Fatalf("reloads at %v, want %v", got, c.reloads)
			}
		})
	}
}

// playReloads returns the offsets at which NGINX reloads for static changes
// at the given offsets, NGINX running from the start.
func playReloads(interval time.Duration, changes []time.Duration) []time.Duration {
	var (
		last    time.Time  // the last reload; zero: none yet
		slot    *time.Time // the armed reload slot
		pending bool       // a held configuration waits for the slot
		reloads []time.Duration
	)
	apply := func(now time.Time, slotCame bool) {
		if !pending {
			return // the slot came for a state already reloaded
		}
		in := reloadFacts{Now: now, LastReload: last, MinInterval: interval, SlotCame: slotCame}
		if d := decideReload(in); d.Hold {
			at := now.Add(d.Slot)
			slot = &at
			return
		}
		last, pending = now, false
		reloads = append(reloads, now.Sub(t0))
	}
	for _, c := range changes {
		now := t0.Add(c)
		if slot != nil && slot.Before(now) {
			at := *slot
			slot = nil
			apply(at, true)
		}
		pending = true
		apply(now, false)
	}
	if slot != nil {
		apply(*slot, true)
	}
	return reloads
}
