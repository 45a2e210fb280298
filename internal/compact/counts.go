package compact

import "iter"

// Counts counts references to values; the zero value holds none. A single
// value is kept inline, more in a map.
type Counts[K comparable] struct {
	one  K
	n    int       // references to one, while more is nil
	more map[K]int // every value and its references, once there are two
}

// Add adds delta references to v, dropping v when it has none left.
func (c *Counts[K]) Add(v K, delta int) {
	if c.more == nil {
		if c.n == 0 || c.one == v {
			c.one, c.n = v, c.n+delta
			if c.n <= 0 {
				*c = Counts[K]{}
			}
			return
		}
		if delta <= 0 {
			return // v holds no reference to drop
		}
		c.more = map[K]int{c.one: c.n}
	}
	c.more[v] += delta
	if c.more[v] <= 0 {
		delete(c.more, v)
	}
	if len(c.more) == 1 {
		for one, n := range c.more {
			*c = Counts[K]{one: one, n: n}
		}
	}
}

// Len is the number of values with a reference.
func (c Counts[K]) Len() int {
	if c.more != nil {
		return len(c.more)
	}
	if c.n > 0 {
		return 1
	}
	return 0
}

// Values are the values with a reference, in no order.
func (c Counts[K]) Values() iter.Seq[K] {
	return func(yield func(K) bool) {
		if c.more == nil {
			if c.n > 0 {
				yield(c.one)
			}
			return
		}
		for v := range c.more {
			if !yield(v) {
				return
			}
		}
	}
}

// Count adds delta to index[k]'s references to v, dropping the key when
// none are left.
func Count[K comparable](index map[string]Counts[K], k string, v K, delta int) {
	c := index[k]
	c.Add(v, delta)
	if c.Len() == 0 {
		delete(index, k)
	} else {
		index[k] = c
	}
}
