package sortedset

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestUpdate checks an index of sets against a map of maps over random
// additions and removals, including removals of what is not there.
func TestUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	got := map[string]Set{}
	want := map[string]map[string]bool{}
	keys, values := []string{"a", "b", "c"}, []string{"w", "x", "y", "z"}
	for step := range 20000 {
		k, v, add := keys[rng.IntN(len(keys))], values[rng.IntN(len(values))], rng.IntN(2) == 0
		Update(got, k, v, add)
		if add {
			if want[k] == nil {
				want[k] = map[string]bool{}
			}
			want[k][v] = true
		} else {
			delete(want[k], v)
			if len(want[k]) == 0 {
				delete(want, k)
			}
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: %d keys, want %d", step, len(got), len(want))
		}
		for k, w := range want {
			if s := got[k]; !slices.Equal(s, slices.Sorted(maps.Keys(w))) {
				t.Fatalf("step %d: key %s holds %v, want %v", step, k, s, w)
			}
			for _, v := range values {
				if got[k].Has(v) != w[v] {
					t.Fatalf("step %d: key %s: Has(%s) = %t", step, k, v, !w[v])
				}
			}
		}
	}
}
