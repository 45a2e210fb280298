package compact

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// model is what the compact indexes replace: a map of counts per key.
type model map[string]map[string]int

func (m model) add(k, v string, delta int) {
	if m[k] == nil {
		m[k] = map[string]int{}
	}
	m[k][v] += delta
	if m[k][v] <= 0 {
		delete(m[k], v)
	}
	if len(m[k]) == 0 {
		delete(m, k)
	}
}

// randomSteps calls step 20,000 times with a random key, value and
// direction, over few enough of each that values come and go.
func randomSteps(seed uint64, step func(i int, k, v string, add bool)) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	keys, values := []string{"a", "b", "c"}, []string{"w", "x", "y", "z"}
	for i := range 20000 {
		step(i, keys[rng.IntN(len(keys))], values[rng.IntN(len(values))], rng.IntN(2) == 0)
	}
}

// TestUpdate checks an index of sets against the model, which counts at
// most one reference per value: additions and removals, including
// removals of what is not there.
func TestUpdate(t *testing.T) {
	got, want := map[string]Set{}, model{}
	randomSteps(3, func(i int, k, v string, add bool) {
		Update(got, k, v, add)
		if add {
			want.add(k, v, 1-want[k][v]) // a set holds v once
		} else {
			want.add(k, v, -want[k][v])
		}
		if len(got) != len(want) {
			t.Fatalf("step %d: %d keys, want %d", i, len(got), len(want))
		}
		for k, w := range want {
			if s := got[k]; !slices.Equal(s, slices.Sorted(maps.Keys(w))) {
				t.Fatalf("step %d: key %s holds %v, want %v", i, k, s, w)
			}
			for v := range w {
				if !got[k].Has(v) {
					t.Fatalf("step %d: key %s: Has(%s) = false", i, k, v)
				}
			}
		}
	})
}

// TestCount checks an index of counts against the model: references
// added and dropped, including drops of values never referenced.
func TestCount(t *testing.T) {
	got, want := map[string]Counts[string]{}, model{}
	randomSteps(1, func(i int, k, v string, add bool) {
		delta := 1
		if !add {
			delta = -1
		}
		Count(got, k, v, delta)
		want.add(k, v, delta)
		if len(got) != len(want) {
			t.Fatalf("step %d: %d keys, want %d", i, len(got), len(want))
		}
		for k, w := range want {
			c := got[k]
			have := map[string]bool{}
			for v := range c.Values() {
				have[v] = true
			}
			if c.Len() != len(w) || len(have) != len(w) {
				t.Fatalf("step %d: key %s holds %v (Len %d), want %v", i, k, have, c.Len(), w)
			}
			if c.more == nil && c.n != w[c.one] {
				t.Fatalf("step %d: key %s counts %d references to %s, want %d", i, k, c.n, c.one, w[c.one])
			}
			if c.more != nil && !maps.Equal(c.more, w) {
				t.Fatalf("step %d: key %s counts %v, want %v", i, k, c.more, w)
			}
		}
	})
}
