package annotations

import (
	"maps"
	"math/rand/v2"
	"testing"
)

// TestRefCounts checks the compact counts against a map of maps, the
// representation they replace, over random additions and removals of
// references, including removals of values never referenced.
func TestRefCounts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	got := map[string]refCounts[string]{}
	want := map[string]map[string]int{}
	keys, values := []string{"a", "b", "c"}, []string{"x", "y", "z", "w"}
	for step := range 20000 {
		k, v := keys[rng.IntN(len(keys))], values[rng.IntN(len(values))]
		delta := 1
		if rng.IntN(2) == 0 {
			delta = -1
		}
		count(got, k, v, delta)
		if want[k] == nil {
			want[k] = map[string]int{}
		}
		want[k][v] += delta
		if want[k][v] <= 0 {
			delete(want[k], v)
		}
		if len(want[k]) == 0 {
			delete(want, k)
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: %d keys, want %d", step, len(got), len(want))
		}
		for k, w := range want {
			c := got[k]
			have := map[string]bool{}
			for v := range c.values() {
				have[v] = true
			}
			if c.len() != len(w) || len(have) != len(w) {
				t.Fatalf("step %d: key %s holds %v (len %d), want %v", step, k, have, c.len(), w)
			}
			for v := range maps.Keys(w) {
				if !have[v] {
					t.Fatalf("step %d: key %s lacks %s", step, k, v)
				}
			}
			if c.more == nil && c.n != w[c.one] {
				t.Fatalf("step %d: key %s counts %d references to %s, want %d", step, k, c.n, c.one, w[c.one])
			}
			if c.more != nil && !maps.Equal(c.more, w) {
				t.Fatalf("step %d: key %s counts %v, want %v", step, k, c.more, w)
			}
		}
	}
}
