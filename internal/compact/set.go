// Package compact holds the values of the pipeline's indexes (an
// Ingress's servers, a host's Ingresses, a backend's users) without a map
// per key: nearly every key has one value or a few, a map per key costs
// some 250 bytes, a slice of one 40 and a value held inline nothing, and
// at 10,000 Ingresses the difference is megabytes of every stage's heap.
package compact

import "slices"

// Set is a sorted set of strings; the zero value is empty. With and
// Without may reuse the slice: keep only what they return.
type Set []string

// With returns s with v added.
func (s Set) With(v string) Set {
	i, found := slices.BinarySearch(s, v)
	if found {
		return s
	}
	return slices.Insert(s, i, v)
}

// Without returns s with v removed.
func (s Set) Without(v string) Set {
	i, found := slices.BinarySearch(s, v)
	if !found {
		return s
	}
	return slices.Delete(s, i, i+1)
}

// Has says whether v is in s.
func (s Set) Has(v string) bool {
	_, found := slices.BinarySearch(s, v)
	return found
}

// Update adds v to (add) or removes it from the set under k in index,
// dropping the key when its set is empty.
func Update(index map[string]Set, k, v string, add bool) {
	if add {
		index[k] = index[k].With(v)
	} else if rest := index[k].Without(v); len(rest) > 0 {
		index[k] = rest
	} else {
		delete(index, k)
	}
}
